// Pieces of hopper.cu for PINGPONG (1 or 2), cut at the "// ---- " lines; hopper.py's _pingpong places them.
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
            {  // the item's stages follow those of every earlier item of this CTA, whichever consumer took it
                const int first_step = (item - first_item) / item_stride * k_tiles;
                stage = first_step % STAGES; phase = (first_step / STAGES) & 1;
            }
// ---- before ordered
            if (item - first_item >= item_stride) wait_turn(consumer);  // the CTA's previous item is issued
// ---- after ordered
            if (item + item_stride < items) pass_turn(consumer);  // the CTA's next item may start its k-loop
