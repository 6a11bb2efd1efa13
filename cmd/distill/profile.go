package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data"
)

// profileFlags are the global flags that profile a run: where its CPU time
// goes, and what holds its memory when the live heap is at its largest.
func profileFlags() []cli.Flag {
	return []cli.Flag{
		&cli.PathFlag{
			Name:      "cpuprofile",
			Usage:     "write a CPU profile of the run to `FILE` (go tool pprof FILE)",
			EnvVars:   []string{"DISTILL_CPUPROFILE"},
			TakesFile: true,
		},
		&cli.PathFlag{
			Name:      "memprofile",
			Usage:     "write a heap profile to `FILE`, taken when the live heap was at its largest (go tool pprof -sample_index=inuse_space FILE)",
			EnvVars:   []string{"DISTILL_MEMPROFILE"},
			TakesFile: true,
		},
	}
}

const profilerKey = "distill.profiler"

// profiler holds a run's profiles between setUp and the end of the run.
type profiler struct {
	cpu     *os.File
	cpuPath string

	memPath string
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	peak    uint64       // the live heap when best was taken
	best    bytes.Buffer // the heap profile at the peak
}

// startProfiles starts the profiles c's flags ask for; nil when none.
func startProfiles(c *cli.Context) (*profiler, error) {
	cpuPath, memPath := c.Path("cpuprofile"), c.Path("memprofile")
	if cpuPath == "" && memPath == "" {
		return nil, nil
	}
	p := &profiler{cpuPath: cpuPath, memPath: memPath}
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		p.cpu = f
	}
	if memPath != "" {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.watchHeap()
	}
	return p, nil
}

// watchHeap samples the live heap (as of the last garbage collection) ten
// times a second and keeps a heap profile of each new peak that is 5% above
// the one kept.
func (p *profiler) watchHeap() {
	defer close(p.done)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if live := sample[0].Value.Uint64(); live > p.peak+p.peak/20 {
				p.snapshot(live)
			}
		}
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

func (p *profiler) snapshot(live uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.best.Reset()
	if err := pprof.Lookup("heap").WriteTo(&p.best, 0); err == nil {
		p.peak = live
	}
}

// finish stops the profiles and writes them. The heap profile is the one at
// the peak, or the one at the end when that is larger.
func (p *profiler) finish() error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
		}
	}
	if p.memPath != "" {
		close(p.stop)
		<-p.done
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > p.peak {
			p.snapshot(ms.HeapAlloc)
		}
		p.mu.Lock()
		err := data.WriteFileAtomic(p.memPath, p.best.Bytes())
		p.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("--memprofile: %w", err))
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}
