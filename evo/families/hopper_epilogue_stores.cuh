            #pragma unroll
            for (int mt = 0; mt < MMA_M_TILES; ++mt) {
                const int row0 = w.m0 + ${ROW_OWNER} * ROWS_PER_CONSUMER + mt * 64;
                #pragma unroll
                for (int chunk = 0; chunk < BN / 64; ++chunk) {
                    #pragma unroll
                    for (int nb = 0; nb < 8; ++nb) {
                        const float* v = acc + mt * (BN / 2) + (chunk * 8 + nb) * 4;
                        const int r = warp * 16 + lane / 4, c = nb * 8 + (lane % 4) * 2;
                        *reinterpret_cast<half2*>(stage_c + r * C_STRIDE + c) = __floats2half2_rn(v[0], v[1]);
                        *reinterpret_cast<half2*>(stage_c + (r + 8) * C_STRIDE + c) = __floats2half2_rn(v[2], v[3]);
                    }
                    store_chunk(stage_c, C, row0, w.n0 + chunk * 64, 64, M, N, consumer, tid_in_wg);
                }
            }