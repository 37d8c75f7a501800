package hosttest

const pageSize = 4096

// sparse is the content of a fake disk or image: pages that were written,
// zeros elsewhere.
type sparse struct{ pages map[int64][]byte }

func newSparse() *sparse { return &sparse{pages: map[int64][]byte{}} }

func (s *sparse) readAt(b []byte, off int64) {
	for len(b) > 0 {
		pg, in := off/pageSize, off%pageSize
		n := copy(b, zeroPage[in:])
		if p, ok := s.pages[pg]; ok {
			copy(b[:n], p[in:])
		}
		b, off = b[n:], off+int64(n)
	}
}

func (s *sparse) writeAt(b []byte, off int64) {
	for len(b) > 0 {
		pg, in := off/pageSize, off%pageSize
		p, ok := s.pages[pg]
		if !ok {
			p = make([]byte, pageSize)
			s.pages[pg] = p
		}
		n := copy(p[in:], b)
		b, off = b[n:], off+int64(n)
	}
}

var zeroPage = make([]byte, pageSize)
