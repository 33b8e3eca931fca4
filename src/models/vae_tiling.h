// The arithmetic of exact spatial tiling for the VAE decoder (vae_decoder.h): the tile grid, the
// halo that makes a tile's core exact, and the compute the halos add. Pure functions.
//
// Grid. One axis of extent n latent pixels split into t tiles is clamped to t' = min(t, n)
// tiles, so that no tile is empty; tile i has the core [i n / t', (i + 1) n / t') and is
// decoded from the span [max(0, core_begin - halo), min(n, core_end + halo)): its halo on each
// side, clipped at the image border.
//
// Halo. Decode a tile from a span whose interior edge is at latent pixel a (the other side of
// it is missing, read as the convolutions' zero padding). Count the output pixels next to that
// edge that differ from the untiled decode, R, at each block's resolution: block 0's 3x3 conv
// (latent resolution) corrupts 1 pixel, R_0 = 1; blocks b = 1 .. n-1 upsample x2 (the corrupted
// border doubles) and convolve (one more pixel), R_b = 2 R_{b-1} + 1, so R_{n-1} = 2^n - 1;
// the last block's conv at full resolution adds one: R = 2^n output pixels = R / S = 2 latent
// pixels, with S = 2^(n-1) the spatial factor (n = number of block widths; also for n = 1,
// where both convs run at latent resolution: R = 2, S = 1). An edge at the image border is
// the untiled decode's own zero padding and corrupts nothing. So a halo of
//   halo = ceil(R / S) = 2 latent pixels, for every block count,
// makes every output pixel of the core exact (equal to the untiled decode); a halo of 1 does
// not (the bound is tight: decoding with it changes the frames). TileHaloLatentPixels computes it
// from the block count by this recurrence rather than assuming 2.
//
// Compute. Every block's work is proportional to the area it convolves, and a tile convolves
// its span, so a tiled decode costs
//   TiledComputeFactor = (sum_i span_y_i) (sum_j span_x_j) / (h w)
// times the untiled one; when the first and last tile of each axis have cores of at least
// `halo` pixels, sum_i span_y_i = h + 2 halo (t_y' - 1), i.e. the halo recompute adds
//   (1 + 2 halo (t_y' - 1) / h) (1 + 2 halo (t_x' - 1) / w) - 1
// (e.g. 12.9% at a 64x64 latent, t = 2; 41.0% at t = 4; 26.6% and 89.1% at 32x32), and at most
// that otherwise.
//
// Errors: none (sizes are trusted: extent, tiles >= 1, halo >= 0, blocks >= 1).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::models {

// One tile along one axis, in latent pixels: the core it contributes to the image and the
// span it is decoded from (the core plus the clipped halo).
struct TileSpan {
  int64_t core_begin = 0, core_end = 0;
  int64_t begin = 0, end = 0;
  int64_t core_size() const { return core_end - core_begin; }
  int64_t size() const { return end - begin; }
};

// The halo in latent pixels of a decoder with `blocks` block widths (see the file comment).
int64_t TileHaloLatentPixels(int64_t blocks);

// The min(tiles, extent) tiles of one axis, in order.
std::vector<TileSpan> TileSpans(int64_t extent, int64_t tiles, int64_t halo);

// The compute of a tiled decode relative to the untiled one (1 for tiles = 1).
double TiledComputeFactor(int64_t height, int64_t width, int64_t tiles, int64_t halo);

}  // namespace tessera::models
