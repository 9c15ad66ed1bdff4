package fxelection

import (
	"sync"
)

// maxQueued bounds the callbacks waiting behind a slow handler: a
// droppable one is dropped when maxQueued or more already wait (the one
// running is not counted). Nothing counts the drops.
const maxQueued = 1024

// dispatcher runs callbacks in order on one goroutine it owns. The
// goroutine runs only while callbacks are queued: it is started by the
// enqueue that finds none running and ends when the queue is empty, so an
// elector without callbacks (or between them) costs no goroutine. At most
// one runs at a time, so callbacks keep their order. A callback that
// panics is recovered and handed to onPanic; the goroutine goes on.
type dispatcher struct {
	onPanic func(where string, v any)

	mu       sync.Mutex
	queue    []callback
	running  bool // a goroutine is delivering the queue
	closing  bool
	done     chan struct{} // closed once closing and no goroutine runs
	doneSent bool
}

// callback is one queued call and the hook it runs (for panic reports).
type callback struct {
	where string
	f     func()
}

func newDispatcher(onPanic func(where string, v any)) *dispatcher {
	return &dispatcher{onPanic: onPanic, done: make(chan struct{})}
}

// enqueue adds f, which runs the hook where; a droppable call is
// discarded when maxQueued or more calls wait. It reports whether f was
// queued (after close, nothing is).
func (d *dispatcher) enqueue(where string, f func(), droppable bool) bool {
	d.mu.Lock()
	if d.closing || (droppable && len(d.queue) >= maxQueued) {
		d.mu.Unlock()
		return false
	}
	d.queue = append(d.queue, callback{where, f})
	start := !d.running
	d.running = true
	d.mu.Unlock()
	if start {
		go d.run()
	}
	return true
}

// run delivers the queue until it is empty, then ends.
func (d *dispatcher) run() {
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.running = false
			d.queue = nil // let a grown backing array go
			if d.closing {
				d.finish()
			}
			d.mu.Unlock()
			return
		}
		c := d.queue[0]
		d.queue[0] = callback{}
		d.queue = d.queue[1:]
		d.mu.Unlock()
		d.call(c)
	}
}

// finish closes done once; the caller holds d.mu.
func (d *dispatcher) finish() {
	if !d.doneSent {
		d.doneSent = true
		close(d.done)
	}
}

// call runs one callback, recovering a panic.
func (d *dispatcher) call(c callback) {
	defer func() {
		if v := recover(); v != nil && d.onPanic != nil {
			d.onPanic(c.where, v)
		}
	}()
	c.f()
}

// closed makes the dispatcher deliver what is queued, accept nothing more
// and then end its goroutine; it returns a channel closed when it has. If
// the caller stops waiting, the goroutine ends when the handler it is
// blocked in returns.
func (d *dispatcher) closed() <-chan struct{} {
	d.mu.Lock()
	d.closing = true
	if !d.running {
		d.finish()
	}
	d.mu.Unlock()
	return d.done
}

// tracker counts running leader work so Stop can wait for it.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.idle)
	}
}

// wait returns a channel closed when no work runs.
func (t *tracker) wait() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return t.idle
}
