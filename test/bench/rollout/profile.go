package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// profile saves a CPU profile of seconds from each process's /debug/pprof at address into dir,
// as <name>.pprof, in the background; the returned wait waits for them.
func profile(ctx context.Context, dir string, seconds int, addresses map[string]string) (wait func()) {
	done := make(chan struct{}, len(addresses))
	for name, address := range addresses {
		go func() {
			defer func() { done <- struct{}{} }()
			path := filepath.Join(dir, name+".pprof")
			if err := saveProfile(ctx, "http://"+address+"/debug/pprof/profile?seconds="+strconv.Itoa(seconds), path, seconds); err != nil {
				say("profile of %s: %v", name, err)
				return
			}
			say("profile of %s: %s (go tool pprof -top %s)", name, path, path)
		}()
	}
	return func() {
		for range addresses {
			<-done
		}
	}
}

func saveProfile(ctx context.Context, url, path string, seconds int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
