// Ring positions: the index of a position a steps away on a ring of n, for any (also
// negative) a. Header-only; used by every ring algorithm in comm/.
#pragma once

namespace tessera::comm {

// a mod n in [0, n), for n > 0.
inline int RingIndex(int a, int n) { return ((a % n) + n) % n; }

}  // namespace tessera::comm
