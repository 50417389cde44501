// Pieces of hopper.cu for PINGPONG=1, cut at the "// ---- " lines; hopper.py's _pingpong places them.
// ---- define
#define PINGPONG 1  // ping-pong consumers: whole tiles each, every other item of the CTA, turns at the tensor cores
// In a multicast pair (CLUSTER_M 2) both CTAs walk the same items, so the same consumer of each takes an
// item, and its releases arrive in both CTAs' `empty` barriers as without ping-pong.
static_assert(SPLIT_K == 1 && TAIL_SPLIT == 1 && !STREAM_K && !SWAP_AB && CONSUMERS == 2,
              "PINGPONG: a consumer finds its stages by counting whole items of k_tiles k-steps; two consumers");
// ---- helpers

// Ping-pong consumers: named barriers 4 and 5 (0 is __syncthreads, 1 split-K's, 2 and 3 each
// consumer's own) pass the tensor cores from one consumer to the other once its k-loop is issued.
__device__ __forceinline__ void wait_turn(int consumer) {  // the other consumer has issued its k-loop
    asm volatile("bar.sync %0, 256;" :: "r"(5 - consumer) : "memory");
}
__device__ __forceinline__ void pass_turn(int consumer) {
    asm volatile("bar.arrive %0, 256;" :: "r"(4 + consumer) : "memory");
}
// ---- before
            // The item's stages follow those of every earlier item of this CTA, whichever consumer took it.
            // Waiting for the turn first matters: a parity wait tells phases apart only one use of a stage
            // apart, and the other consumer's earlier item is then issued, its stages' earlier uses seen.
            if (item - first_item >= item_stride) wait_turn(consumer);  // the CTA's previous item is issued
            {
                const int first_step = (item - first_item) / item_stride * k_tiles;
                stage = first_step % STAGES; phase = (first_step / STAGES) & 1;
            }
// ---- after
            if (item + item_stride < items) pass_turn(consumer);  // the CTA's next item may start its k-loop
