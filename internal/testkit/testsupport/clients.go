package testsupport

import (
	"io"
	"net/http"
	"sync"
	"testing"
)

// GetConcurrently is the load of a server test: clients goroutines, each
// sending requests GETs one after another, to url(client, i) for its i-th
// request, and reading each answer whole. A request that fails fails the
// test, and ends its client.
func GetConcurrently(t testing.TB, clients, requests int, url func(client, i int) string) {
	t.Helper()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range requests {
				resp, err := http.Get(url(c, i))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}
