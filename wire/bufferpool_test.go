package wire

import "testing"

func TestBufferPoolReusesWithoutAllocating(t *testing.T) {
	for _, size := range []int{32 << 10, 4 << 10} {
		b := &BufferPool{Size: size}
		first := b.Get()
		if len(first) != size || cap(first) != size {
			t.Fatalf("Get: len %d cap %d, want %d", len(first), cap(first), size)
		}
		first[size-1] = 7
		b.Put(first)
		b.Put(make([]byte, size/2)) // another size is not kept
		allocs := testing.AllocsPerRun(100, func() { b.Put(b.Get()) })
		if allocs != 0 {
			t.Errorf("size %d: %.1f allocations per Get and Put, want 0", size, allocs)
		}
		if got := b.Get(); len(got) != size {
			t.Errorf("size %d: a pooled buffer of %d bytes", size, len(got))
		}
	}
}
