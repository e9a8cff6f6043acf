package framework

import "sync"

// ForEach calls fn for 0..n-1, at most parallel at a time, and returns the first error (after
// all calls have returned).
func ForEach(n, parallel int, fn func(int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	next := make(chan int)
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return firstErr
}
