// A soak client on grpc-go 1.33: workers call a grpc.testing.TestService server for a bounded
// time with a mix of unary, server-streaming and ping-pong calls, calls cancelled mid-flight
// and calls that run out of their deadline, and count every call's outcome by kind and status.
//
//	peer_go_soak_client --server_port=50051 --duration=600s --workers=32 --channels=4
//
// Each kind expects one status: OK for unary, stream and pingpong, CANCELLED for cancel,
// DEADLINE_EXCEEDED for deadline. Any other status is unexpected. Every call also has a 20 s
// guard deadline, so a call the server lost ends as DEADLINE_EXCEEDED on a kind that does not
// expect it (counted as unexpected) instead of hanging.
//
// SIGUSR1 marks the start of the drain phase; the client then prints `drain phase from <time>`
// (the harness waits for that line before it sends the server SIGTERM). Calls that began before
// it and ended after are counted as phase `straddle`, calls begun after it as `drain`; in both,
// UNAVAILABLE is accepted (a call refused by, or still running on, a server that is going away
// gets that status). Only a call that never got an answer (the guard deadline) or got another
// status is unexpected there. Every --report interval and at the end, one line per phase, kind
// and status: `count <phase> <kind> <STATUS> <n>`, then `unexpected <phase> <n>`.
// The first few calls with an unexpected status are printed as they end, with the status message:
// `failed call at <time>: <phase> <kind> worker <w> channel <c>: <STATUS>: <message>`.
// Exits 0 when no call had an unexpected status, 1 otherwise.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	testpb "grpc/testing"
)

const guardDeadline = 20 * time.Second

// The first unexpected statuses are printed with their messages (the transport's reason for a
// lost connection is in the message); the rest are only counted.
const maxFailuresShown = 5

var failuresShown int32

var phaseOrder = map[string]int{"steady": 0, "straddle": 1, "drain": 2}

type key struct {
	phase string
	kind  string
	code  codes.Code
}

// tally counts outcomes. Thread-safe.
type tally struct {
	mu     sync.Mutex
	counts map[key]int64
}

func (t *tally) add(k key) {
	t.mu.Lock()
	t.counts[k]++
	t.mu.Unlock()
}

func expected(phase, kind string, code codes.Code) bool {
	if phase != "steady" && code == codes.Unavailable {
		return true
	}
	switch kind {
	case "cancel":
		// A call may also finish before the cancel reaches it.
		return code == codes.Canceled || code == codes.OK
	case "deadline":
		return code == codes.DeadlineExceeded
	default:
		return code == codes.OK
	}
}

// report prints every count; returns the unexpected totals per phase.
func (t *tally) report(final bool) map[string]int64 {
	t.mu.Lock()
	keys := make([]key, 0, len(t.counts))
	for k := range t.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.phase != b.phase {
			return phaseOrder[a.phase] < phaseOrder[b.phase]
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.code < b.code
	})
	unexpected := map[string]int64{"steady": 0, "straddle": 0, "drain": 0}
	prefix := "progress"
	if final {
		prefix = "count"
	}
	for _, k := range keys {
		n := t.counts[k]
		fmt.Printf("%s %s %s %s %d\n", prefix, k.phase, k.kind, k.code, n)
		if !expected(k.phase, k.kind, k.code) {
			unexpected[k.phase] += n
		}
	}
	t.mu.Unlock()
	return unexpected
}

func payload(size int) *testpb.Payload {
	return &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, size)}
}

// readAll reads the server stream that opening returned (`stream`, `err`) to its end; returns its
// status (OK at the end of the stream).
func readAll(stream testpb.TestService_StreamingOutputCallClient, err error) *status.Status {
	if err != nil {
		return status.Convert(err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				return status.New(codes.OK, "")
			}
			return status.Convert(err)
		}
	}
}

// waitingStream opens a StreamingOutputCall whose handler waits `wait` before its one response.
func waitingStream(ctx context.Context, client testpb.TestServiceClient,
	wait time.Duration) (testpb.TestService_StreamingOutputCallClient, error) {
	return client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{
		ResponseType: testpb.PayloadType_COMPRESSABLE,
		ResponseParameters: []*testpb.ResponseParameters{
			{Size: 10, IntervalUs: int32(wait / time.Microsecond)}}})
}

// call makes one call of `kind`; returns its status.
func call(client testpb.TestServiceClient, kind string, rng *rand.Rand) *status.Status {
	ctx, cancelGuard := context.WithTimeout(context.Background(), guardDeadline)
	defer cancelGuard()
	switch kind {
	case "unary":
		_, err := client.UnaryCall(ctx, &testpb.SimpleRequest{
			ResponseType: testpb.PayloadType_COMPRESSABLE, ResponseSize: 1024, Payload: payload(1024)})
		return status.Convert(err)
	case "stream":
		params := make([]*testpb.ResponseParameters, 5)
		for i := range params {
			params[i] = &testpb.ResponseParameters{Size: 1024}
		}
		return readAll(client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{
			ResponseType: testpb.PayloadType_COMPRESSABLE, ResponseParameters: params}))
	case "pingpong":
		stream, err := client.FullDuplexCall(ctx)
		if err != nil {
			return status.Convert(err)
		}
		for i := 0; i < 4; i++ {
			if err := stream.Send(&testpb.StreamingOutputCallRequest{
				ResponseType:       testpb.PayloadType_COMPRESSABLE,
				ResponseParameters: []*testpb.ResponseParameters{{Size: 512}},
				Payload:            payload(512)}); err != nil {
				break // the status comes from Recv
			}
			if _, err := stream.Recv(); err != nil {
				return status.Convert(err)
			}
		}
		stream.CloseSend()
		if _, err := stream.Recv(); err != io.EOF {
			return status.Convert(err)
		}
		return status.New(codes.OK, "")
	case "cancel":
		// The handler is asked to wait 500 ms; the call is cancelled within 50 ms.
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := waitingStream(callCtx, client, 500*time.Millisecond)
		if err != nil {
			return status.Convert(err)
		}
		time.Sleep(time.Duration(rng.Intn(50)) * time.Millisecond)
		cancel()
		return readAll(stream, nil)
	case "deadline":
		callCtx, cancel := context.WithTimeout(ctx, time.Duration(20+rng.Intn(80))*time.Millisecond)
		defer cancel()
		return readAll(waitingStream(callCtx, client, 2*time.Second))
	}
	return status.New(codes.Internal, "unknown kind "+kind)
}

// Kinds and their weights in the mix: about one call in six is cancelled, one in six runs out
// of its deadline.
var mix = []struct {
	kind   string
	weight int
}{{"unary", 40}, {"stream", 15}, {"pingpong", 15}, {"cancel", 15}, {"deadline", 15}}

func pick(rng *rand.Rand) string {
	n := rng.Intn(100)
	for _, m := range mix {
		if n < m.weight {
			return m.kind
		}
		n -= m.weight
	}
	return "unary"
}

func main() {
	host := flag.String("server_host", "127.0.0.1", "server host")
	port := flag.Int("server_port", 0, "server port")
	duration := flag.Duration("duration", 60*time.Second, "how long to run")
	workers := flag.Int("workers", 32, "concurrent callers")
	channels := flag.Int("channels", 4, "client connections the workers share")
	every := flag.Duration("report", 30*time.Second, "progress report interval")
	flag.Parse()
	if *port <= 0 {
		fmt.Fprintln(os.Stderr, "--server_port is required")
		os.Exit(2)
	}

	var phase atomic.Value
	phase.Store("steady")
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		phase.Store("drain")
		fmt.Printf("drain phase from %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	}()

	clients := make([]testpb.TestServiceClient, *channels)
	for i := range clients {
		conn, err := grpc.Dial(fmt.Sprintf("%s:%d", *host, *port), grpc.WithInsecure())
		if err != nil {
			fmt.Fprintf(os.Stderr, "dial: %v\n", err)
			os.Exit(1)
		}
		defer conn.Close()
		clients[i] = testpb.NewTestServiceClient(conn)
	}

	results := &tally{counts: map[key]int64{}}
	end := time.Now().Add(*duration)
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w) + time.Now().UnixNano()))
			client := clients[w%len(clients)]
			for time.Now().Before(end) {
				p := phase.Load().(string)
				kind := pick(rng)
				st := call(client, kind, rng)
				code := st.Code()
				if p == "steady" && phase.Load().(string) == "drain" {
					p = "straddle" // began before the drain, ended after
				}
				if !expected(p, kind, code) && atomic.AddInt32(&failuresShown, 1) <= maxFailuresShown {
					fmt.Printf("failed call at %s: %s %s worker %d channel %d: %s: %s\n",
						time.Now().UTC().Format("15:04:05.000000"), p, kind, w, w%len(clients),
						code, st.Message())
				}
				if p != "steady" && code == codes.Unavailable {
					time.Sleep(10 * time.Millisecond) // the server is gone: do not spin
				}
				results.add(key{p, kind, code})
			}
		}(w)
	}
	ticker := time.NewTicker(*every)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-ticker.C:
			fmt.Printf("at %s\n", time.Now().UTC().Format(time.RFC3339))
			results.report(false)
		case <-done:
			running = false
		}
	}
	unexpected := results.report(true)
	fmt.Printf("unexpected steady %d\nunexpected straddle %d\nunexpected drain %d\n",
		unexpected["steady"], unexpected["straddle"], unexpected["drain"])
	if unexpected["steady"]+unexpected["straddle"]+unexpected["drain"] > 0 {
		os.Exit(1)
	}
}
