package framework

import (
	"sync"
	"time"
)

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

// Every calls fn every interval, in a goroutine of its own, until the returned stop is called;
// stop returns once fn no longer runs.
func Every(interval time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fn()
			}
		}
	}()
	return func() { close(done); <-finished }
}
