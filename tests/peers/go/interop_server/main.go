// grpc.testing.TestService on grpc-go 1.33 (Debian's golang-google-grpc-dev): the interop
// server that rill's interop client (and the other peers' clients) are run against.
//
//	peer_go_interop_server --port=0 --use_tls=false
//
// Prints `listening on <port>` on stdout once it accepts calls, and stops on SIGINT or SIGTERM.
// Behaviour follows the server features of gRPC's interop test descriptions: EmptyCall,
// UnaryCall, StreamingOutputCall, StreamingInputCall, FullDuplexCall, HalfDuplexCall,
// CompressedRequest (expect_compressed), Echo Status, Echo Metadata and
// ResponseParameters.interval_us. UnimplementedCall stays unimplemented.
//
// CompressedResponse is not possible: a grpc-go 1.33 server compresses its responses exactly
// when the request was compressed (with the request's algorithm), and a handler can neither ask
// for compression nor turn it off per message. response_compressed and
// ResponseParameters.compressed are therefore ignored, as by the grpc-js server.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // gzip-compressed requests are accepted
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	testpb "grpc/testing"
)

const (
	echoInitialKey  = "x-grpc-test-echo-initial"
	echoTrailingKey = "x-grpc-test-echo-trailing-bin"
	// The gRPC message prefix: compressed flag and 4-byte length.
	messagePrefixLength = 5
)

// lastMessage records whether the last message a call received was compressed. One per call,
// made by compressionRecorder.TagRPC; written and read on the goroutine that receives the
// call's messages (grpc-go reports a message to the stats handler before the handler sees it).
type lastMessage struct {
	compressed bool
}

type lastMessageKey struct{}

// compressionRecorder is a stats.Handler that tells a handler whether the message it just
// received was compressed, which grpc-go 1.33 does not expose. An uncompressed message's wire
// length is its length plus the 5-byte prefix, exactly; a compressed one's is the prefix plus
// its gzip stream, which for the interop payloads (kilobytes of zeros) is far shorter.
type compressionRecorder struct{}

func (compressionRecorder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, lastMessageKey{}, &lastMessage{})
}

func (compressionRecorder) HandleRPC(ctx context.Context, s stats.RPCStats) {
	in, ok := s.(*stats.InPayload)
	if !ok {
		return
	}
	if last, ok := ctx.Value(lastMessageKey{}).(*lastMessage); ok {
		last.compressed = in.WireLength != in.Length+messagePrefixLength
	}
}

func (compressionRecorder) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (compressionRecorder) HandleConn(context.Context, stats.ConnStats) {}

// checkCompression answers CompressedRequest: nil when the last received message's compression
// matches `expected`, INVALID_ARGUMENT otherwise.
func checkCompression(ctx context.Context, expected *testpb.BoolValue) error {
	if expected == nil {
		return nil
	}
	last, ok := ctx.Value(lastMessageKey{}).(*lastMessage)
	if !ok {
		return status.Error(codes.Internal, "the compression of the request was not recorded")
	}
	if last.compressed == expected.Value {
		return nil
	}
	if expected.Value {
		return status.Error(codes.InvalidArgument, "request was not compressed")
	}
	return status.Error(codes.InvalidArgument, "request was compressed")
}

// echoMetadata returns the client's echo keys to be sent back: the initial one as initial
// metadata, the trailing one as trailing metadata.
func echoMetadata(ctx context.Context) (header, trailer metadata.MD) {
	header, trailer = metadata.MD{}, metadata.MD{}
	incoming, _ := metadata.FromIncomingContext(ctx)
	if values := incoming.Get(echoInitialKey); len(values) > 0 {
		header.Set(echoInitialKey, values...)
	}
	if values := incoming.Get(echoTrailingKey); len(values) > 0 {
		trailer.Set(echoTrailingKey, values...)
	}
	return header, trailer
}

// echoedStatus is Echo Status: the error the request asks the call to end with, or nil.
func echoedStatus(echo *testpb.EchoStatus) error {
	if echo == nil || echo.Code == 0 {
		return nil
	}
	return status.Error(codes.Code(echo.Code), echo.Message)
}

// payload is `size` zero bytes of type COMPRESSABLE.
func payload(size int32) (*testpb.Payload, error) {
	if size < 0 {
		return nil, status.Error(codes.InvalidArgument, "negative response size")
	}
	return &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, size)}, nil
}

// sendResponses writes one response per ResponseParameters of `request`, honouring interval_us.
func sendResponses(request *testpb.StreamingOutputCallRequest,
	send func(*testpb.StreamingOutputCallResponse) error) error {
	if request.ResponseType != testpb.PayloadType_COMPRESSABLE {
		return status.Error(codes.InvalidArgument, "unsupported response_type")
	}
	for _, parameters := range request.ResponseParameters {
		if parameters.IntervalUs > 0 {
			time.Sleep(time.Duration(parameters.IntervalUs) * time.Microsecond)
		}
		body, err := payload(parameters.Size)
		if err != nil {
			return err
		}
		if err := send(&testpb.StreamingOutputCallResponse{Payload: body}); err != nil {
			return err
		}
	}
	return nil
}

// StreamingOutputCall handlers started, running now and at most at once (printed at exit for
// the hardening prober).
var outputCallsStarted, outputCallsRunning, outputCallsPeak int64

// testService is grpc.testing.TestService. Thread-safe: its only state is the counters above.
type testService struct {
	testpb.UnimplementedTestServiceServer
}

func (testService) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	header, trailer := echoMetadata(ctx)
	if err := grpc.SetHeader(ctx, header); err != nil {
		return nil, err
	}
	if err := grpc.SetTrailer(ctx, trailer); err != nil {
		return nil, err
	}
	return &testpb.Empty{}, nil
}

func (testService) UnaryCall(ctx context.Context,
	request *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	header, trailer := echoMetadata(ctx)
	if err := grpc.SetHeader(ctx, header); err != nil {
		return nil, err
	}
	if err := grpc.SetTrailer(ctx, trailer); err != nil {
		return nil, err
	}
	if err := checkCompression(ctx, request.ExpectCompressed); err != nil {
		return nil, err
	}
	if request.ResponseType != testpb.PayloadType_COMPRESSABLE {
		return nil, status.Error(codes.InvalidArgument, "unsupported response_type")
	}
	body, err := payload(request.ResponseSize)
	if err != nil {
		return nil, err
	}
	if err := echoedStatus(request.ResponseStatus); err != nil {
		return nil, err
	}
	return &testpb.SimpleResponse{Payload: body}, nil
}

func (testService) CacheableUnaryCall(ctx context.Context,
	_ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	header, trailer := echoMetadata(ctx)
	header.Set("cache-control", "max-age=60, public")
	if err := grpc.SetHeader(ctx, header); err != nil {
		return nil, err
	}
	if err := grpc.SetTrailer(ctx, trailer); err != nil {
		return nil, err
	}
	// The payload differs per call so that a cache hit is recognisable.
	body := []byte(fmt.Sprint(time.Now().UnixNano()))
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: body}}, nil
}

func (testService) StreamingOutputCall(request *testpb.StreamingOutputCallRequest,
	stream testpb.TestService_StreamingOutputCallServer) error {
	atomic.AddInt64(&outputCallsStarted, 1)
	running := atomic.AddInt64(&outputCallsRunning, 1)
	defer atomic.AddInt64(&outputCallsRunning, -1)
	for peak := atomic.LoadInt64(&outputCallsPeak); running > peak; peak = atomic.LoadInt64(&outputCallsPeak) {
		if atomic.CompareAndSwapInt64(&outputCallsPeak, peak, running) {
			break
		}
	}
	header, trailer := echoMetadata(stream.Context())
	stream.SetTrailer(trailer)
	if err := stream.SetHeader(header); err != nil {
		return err
	}
	if err := echoedStatus(request.ResponseStatus); err != nil {
		return err
	}
	return sendResponses(request, stream.Send)
}

func (testService) StreamingInputCall(stream testpb.TestService_StreamingInputCallServer) error {
	header, trailer := echoMetadata(stream.Context())
	stream.SetTrailer(trailer)
	if err := stream.SetHeader(header); err != nil {
		return err
	}
	aggregated := 0
	for {
		request, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := checkCompression(stream.Context(), request.ExpectCompressed); err != nil {
			return err
		}
		aggregated += len(request.GetPayload().GetBody())
	}
	return stream.SendAndClose(
		&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(aggregated)})
}

func (testService) FullDuplexCall(stream testpb.TestService_FullDuplexCallServer) error {
	header, trailer := echoMetadata(stream.Context())
	stream.SetTrailer(trailer)
	if err := stream.SetHeader(header); err != nil {
		return err
	}
	for {
		request, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := echoedStatus(request.ResponseStatus); err != nil {
			return err
		}
		if err := sendResponses(request, stream.Send); err != nil {
			return err
		}
	}
}

func (testService) HalfDuplexCall(stream testpb.TestService_HalfDuplexCallServer) error {
	header, trailer := echoMetadata(stream.Context())
	stream.SetTrailer(trailer)
	if err := stream.SetHeader(header); err != nil {
		return err
	}
	var requests []*testpb.StreamingOutputCallRequest
	for {
		request, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := echoedStatus(request.ResponseStatus); err != nil {
			return err
		}
		requests = append(requests, request)
	}
	for _, request := range requests {
		if err := sendResponses(request, stream.Send); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	port := flag.Int("port", 0, "port to listen on; 0 picks a free one")
	useTLS := flag.Bool("use_tls", false, "must be false: this peer speaks plaintext only")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected argument: %s\n", flag.Arg(0))
		os.Exit(2)
	}
	if *useTLS {
		fmt.Fprintln(os.Stderr, "--use_tls=true is not supported by this peer")
		os.Exit(2)
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintf(os.Stderr, "bad --port: %d\n", *port)
		os.Exit(2)
	}

	listener, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot listen on port %d: %v\n", *port, err)
		os.Exit(1)
	}
	server := grpc.NewServer(grpc.StatsHandler(compressionRecorder{}))
	testpb.RegisterTestServiceServer(server, &testService{})

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
	// Calls still running get a second to finish, as the other peers' servers give them.
	timer := time.AfterFunc(time.Second, server.Stop)
	server.GracefulStop()
	timer.Stop()
	fmt.Fprintf(os.Stderr, "StreamingOutputCall handlers started %d, peak running %d\n",
		atomic.LoadInt64(&outputCallsStarted), atomic.LoadInt64(&outputCallsPeak))
}
