// Package bad breaks every determinism rule once, so the lint test can
// prove that it notices each of them. It is never built.
package bad

import (
	crand "crypto/rand"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func all(m map[string]int, c chan int) {
	go func() {}()     // want: go statement
	select {}          // want: select
	c <- 1             // want: channel send
	<-c                // want: channel receive
	_ = time.Now()     // want: time.Now
	time.Sleep(1)      // want: time.Sleep
	_ = time.After(1)  // want: time.After
	_ = rand.IntN(3)   // want: math/rand/v2 global
	for k := range m { // want: range over map
		_ = k
	}
	for k := range maps.Keys(m) { // want: maps.Keys outside slices.Sorted
		_ = k
	}
	_ = slices.Sorted(maps.Keys(m)) // allowed
	_ = rand.New(rand.NewPCG(1, 2)) // allowed
	var wg sync.WaitGroup
	wg.Wait()
	_, _ = crand.Read(nil)
	_, _ = os.Open("x")
	_ = vfs.Default // want: vfs.Default
}
