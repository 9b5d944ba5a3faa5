// Package intheap is a min-heap of ints for container/heap, which the
// topological orders (the run plan, a run comparison) pop smallest first.
package intheap

// Min is a min-heap of ints; use it through container/heap.
type Min []int

func (h Min) Len() int           { return len(h) }
func (h Min) Less(a, b int) bool { return h[a] < h[b] }
func (h Min) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *Min) Push(x any)        { *h = append(*h, x.(int)) }
func (h *Min) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
