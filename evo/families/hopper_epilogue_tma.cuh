            // TMA_STORE: each 64x64 chunk of C goes from the accumulators into a 128-byte-swizzled
            // staging tile (TMA_BUFFERS per consumer, used in turn) and from there to C by one TMA store,
            // issued by the consumer's first thread; with two tiles the next chunk is converted while the
            // store runs. The TMA unit clips rows and columns beyond M and N.
            half* tma_c = reinterpret_cast<half*>(smem + REGION_BYTES + 1024);  // past the barriers, 1024-aligned
            #pragma unroll
            for (int mt = 0; mt < MMA_M_TILES; ++mt) {
                const int row0 = w.m0 + ${ROW_OWNER} * ROWS_PER_CONSUMER + mt * 64;
                #pragma unroll
                for (int chunk = 0; chunk < BN / 64; ++chunk) {
                    const int i = mt * (BN / 64) + chunk;  // the chunk's place in the tile
                    const int tile = consumer * TMA_BUFFERS + i % TMA_BUFFERS;  // this chunk's staging tile
                    uint8_t* buf = reinterpret_cast<uint8_t*>(tma_c + tile * (64 * 64));
                    if (tid_in_wg == 0) {  // the store that last read this staging tile is done reading it
                        if (i == 0) bulk_wait_read<0>(); else bulk_wait_read<TMA_BUFFERS - 1>();
                    }
                    consumer_sync(consumer);
                    #pragma unroll
                    for (int nb = 0; nb < 8; ++nb) {
                        const float* v = acc + mt * (BN / 2) + (chunk * 8 + nb) * 4;
                        // row r of the chunk is 128 bytes; its 16-byte pieces are swizzled by r % 8
                        // (as the tensor map's SWIZZLE_128B reads them): no bank conflicts across a warp
                        const int r = warp * 16 + lane / 4, piece = (nb ^ (r % 8)) * 16 + (lane % 4) * 4;
                        *reinterpret_cast<half2*>(buf + r * 128 + piece) = __floats2half2_rn(v[0], v[1]);
                        *reinterpret_cast<half2*>(buf + (r + 8) * 128 + piece) = __floats2half2_rn(v[2], v[3]);
                    }
                    fence_proxy_async();  // the writes above, visible to the TMA unit
                    consumer_sync(consumer);
                    if (tid_in_wg == 0) {
                        tma_store_2d(&tmC, buf, w.n0 + chunk * 64, row0);
                        bulk_commit();
                    }
                }
            }
