package capture

import "io"

// readChunk bounds how much a reader allocates ahead of data that has
// actually arrived. A length field is only a claim: a 40-byte crafted file
// can declare a 16 MiB record, and allocating the claim up front lets such a
// file (or a fuzzer) cost megabytes per record.
const readChunk = 64 << 10

// readFullGrow fills buf[have:n] from r, growing buf at most readChunk
// beyond the bytes received so far. It returns the (possibly reallocated)
// buffer of length n, or, on a short read, the count of bytes present and
// the error.
func readFullGrow(r io.Reader, buf []byte, have, n int) ([]byte, int, error) {
	for have < n {
		want := min(n, have+readChunk)
		if cap(buf) < want {
			nb := make([]byte, want, max(want, min(n, 2*cap(buf))))
			copy(nb, buf[:have])
			buf = nb
		}
		buf = buf[:want]
		k, err := io.ReadFull(r, buf[have:want])
		have += k
		if err != nil {
			return buf, have, err
		}
	}
	return buf[:n], n, nil
}
