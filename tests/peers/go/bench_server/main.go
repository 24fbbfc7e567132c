// grpc.testing.BenchmarkService on grpc-go 1.33 (Debian's golang-google-grpc-dev): the grpc-go
// server rill's server is measured against in bench/side_by_side and bench/latency.
//
//	peer_go_bench_server --port=0 --threads=1
//
// Serves UnaryCall and StreamingCall (ping-pong: one response per request until the client
// half-closes); each response's payload body is the request's response_size zero bytes, made
// per response as a grpc-go handler would. The other methods stay unimplemented. --threads sets
// GOMAXPROCS (the Go threads that run goroutines at once; 0 leaves Go's default, one per
// CPU the process may use). Prints `listening on <port>` once it accepts calls and stops on
// SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"google.golang.org/grpc"

	testpb "grpc/testing"
)

type benchmarkService struct {
	testpb.UnimplementedBenchmarkServiceServer
}

func response(request *testpb.SimpleRequest) *testpb.SimpleResponse {
	size := request.GetResponseSize()
	if size < 0 {
		size = 0
	}
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: make([]byte, size)}}
}

func (*benchmarkService) UnaryCall(_ context.Context, request *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return response(request), nil
}

func (*benchmarkService) StreamingCall(stream testpb.BenchmarkService_StreamingCallServer) error {
	for {
		request, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(response(request)); err != nil {
			return err
		}
	}
}

func main() {
	port := flag.Int("port", 0, "port to listen on; 0 picks a free one")
	threads := flag.Int("threads", 0, "GOMAXPROCS; 0 keeps Go's default")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected argument: %s\n", flag.Arg(0))
		os.Exit(2)
	}
	if *port < 0 || *port > 65535 || *threads < 0 {
		fmt.Fprintln(os.Stderr, "bad --port or --threads")
		os.Exit(2)
	}
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
	}

	listener, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot listen on port %d: %v\n", *port, err)
		os.Exit(1)
	}
	server := grpc.NewServer()
	testpb.RegisterBenchmarkServiceServer(server, &benchmarkService{})

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	fmt.Printf("listening on %d\n", listener.Addr().(*net.TCPAddr).Port)

	select {
	case err := <-served:
		fmt.Fprintf(os.Stderr, "serving stopped: %v\n", err)
		os.Exit(1)
	case <-stop:
	}
	timer := time.AfterFunc(time.Second, server.Stop)
	server.GracefulStop()
	timer.Stop()
}
