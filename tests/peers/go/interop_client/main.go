// The gRPC interop test client on grpc-go 1.33 (Debian's golang-google-grpc-dev): runs the test
// cases of gRPC's interop test descriptions against any grpc.testing.TestService server
// (rill's or another peer's).
//
//	peer_go_interop_client --server_host=127.0.0.1 --server_port=50051 --test_case=all
//
// Prints `PASS <case>` per case that passed and `FAIL <case>: <assertion>` per case that did
// not; exits 0 when every case passed, 1 otherwise and 2 for bad flags. --test_case takes one
// case, a comma-separated list, or `all` (every case below, in order); all cases share one
// channel.
//
// grpc-go 1.33 lacks three things the compression cases need, and this client gets them from
// public API as follows:
//   - grpc-accept-encoding: grpc-go 1.33 sends it only on calls it compresses, naming that one
//     algorithm, so a server that compresses only what the client advertises (rill, grpc-java)
//     answers such calls uncompressed. Every call advertises the gzip this client registered, as
//     later grpc-go releases do, through metadata (see advertiseEncodings);
//   - the compressed flag of a received message: a stats handler compares the message's wire
//     length with its decoded length (see flagRecorder);
//   - an uncompressed message on a compressed call (client_compressed_streaming): compression
//     is chosen per call (grpc.UseCompressor), so the message is encoded ahead with the codec
//     and compressor of an uncompressed call (grpc.PreparedMsg) and sent as it is.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	testpb "grpc/testing"
)

const (
	echoInitialKey       = "x-grpc-test-echo-initial"
	echoInitialValue     = "test_initial_metadata_value"
	echoTrailingKey      = "x-grpc-test-echo-trailing-bin"
	echoTrailingValue    = "\xab\xab\xab"
	specialStatusMessage = "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP \U0001F608\t\n"
	// Every call but timeout_on_sleeping_server's gets this deadline, so a hung server fails the
	// case instead of hanging the client.
	callDeadline = 30 * time.Second
	// The gRPC message prefix: compressed flag and 4-byte length.
	messagePrefixLength = 5
)

// receivedFlags collects the compressed flag of each message a call receives, in order.
// Thread-safe.
type receivedFlags struct {
	mu         sync.Mutex
	compressed []bool
}

func (r *receivedFlags) add(compressed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.compressed = append(r.compressed, compressed)
}

// at is the flag of the i-th received message; false, false when fewer arrived.
func (r *receivedFlags) at(i int) (compressed, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.compressed) {
		return false, false
	}
	return r.compressed[i], true
}

type receivedFlagsKey struct{}

// recordFlags returns a context whose calls record their received messages' compressed flags.
func recordFlags(ctx context.Context) (context.Context, *receivedFlags) {
	flags := &receivedFlags{}
	return context.WithValue(ctx, receivedFlagsKey{}, flags), flags
}

// flagRecorder is a stats.Handler that feeds the receivedFlags of a call's context. An
// uncompressed message's wire length is its length plus the 5-byte prefix, exactly; a
// compressed one's is the prefix plus its gzip stream, which for the interop payloads
// (kilobytes of zeros) is far shorter. grpc-go reports each message before RecvMsg returns it.
type flagRecorder struct{}

func (flagRecorder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}

func (flagRecorder) HandleRPC(ctx context.Context, s stats.RPCStats) {
	in, ok := s.(*stats.InPayload)
	if !ok {
		return
	}
	if flags, ok := ctx.Value(receivedFlagsKey{}).(*receivedFlags); ok {
		flags.add(in.WireLength != in.Length+messagePrefixLength)
	}
}

func (flagRecorder) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (flagRecorder) HandleConn(context.Context, stats.ConnStats) {}

// advertiseEncodings adds grpc-accept-encoding (the decompressors this client has) to every call.
func advertiseEncodings() []grpc.DialOption {
	advertise := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "grpc-accept-encoding", gzip.Name)
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, request,
			response interface{}, conn *grpc.ClientConn, invoker grpc.UnaryInvoker,
			options ...grpc.CallOption) error {
			return invoker(advertise(ctx), method, request, response, conn, options...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc,
			conn *grpc.ClientConn, method string, streamer grpc.Streamer,
			options ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(advertise(ctx), desc, conn, method, options...)
		}),
	}
}

// checkCode fails unless err carries `want` (nil is OK).
func checkCode(err error, want codes.Code) error {
	got := status.Code(err)
	if got != want {
		return fmt.Errorf("status %d (%s), wanted %s", int(got), status.Convert(err).Message(),
			want)
	}
	return nil
}

func allZero(body []byte) bool {
	for _, b := range body {
		if b != 0 {
			return false
		}
	}
	return true
}

// checkBody fails unless body is `size` zero bytes.
func checkBody(body []byte, size int) error {
	if len(body) != size || !allZero(body) {
		return fmt.Errorf("response has %d bytes (or non-zero bytes), wanted %d zeros", len(body),
			size)
	}
	return nil
}

func largeUnaryRequest() *testpb.SimpleRequest {
	return &testpb.SimpleRequest{
		ResponseSize: 314159,
		Payload:      &testpb.Payload{Body: make([]byte, 271828)},
	}
}

func streamingRequest(responseSize, payloadSize int) *testpb.StreamingOutputCallRequest {
	return &testpb.StreamingOutputCallRequest{
		ResponseParameters: []*testpb.ResponseParameters{{Size: int32(responseSize)}},
		Payload:            &testpb.Payload{Body: make([]byte, payloadSize)},
	}
}

// expectEnd fails unless the stream ends with OK and no further message.
func expectEnd(recv func() (*testpb.StreamingOutputCallResponse, error), what string) error {
	response, err := recv()
	if err == nil {
		return fmt.Errorf("%s: another response arrived (%d bytes)",
			what, len(response.GetPayload().GetBody()))
	}
	if err != io.EOF {
		return checkCode(err, codes.OK)
	}
	return nil
}

// interopClient runs the cases over one channel. Thread-compatible.
type interopClient struct {
	stub          testpb.TestServiceClient
	unimplemented testpb.UnimplementedServiceClient
}

func callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callDeadline)
}

// checkUnary makes a UnaryCall of request on ctx that must end with want: when that is OK,
// answered with request's response_size zeros; otherwise, when wantMessage is not empty, with
// that status message.
func (c *interopClient) checkUnary(ctx context.Context, request *testpb.SimpleRequest,
	want codes.Code, wantMessage string, options ...grpc.CallOption) error {
	response, err := c.stub.UnaryCall(ctx, request, options...)
	if err := checkCode(err, want); err != nil {
		return err
	}
	if want == codes.OK {
		return checkBody(response.GetPayload().GetBody(), int(request.ResponseSize))
	}
	if got := status.Convert(err).Message(); wantMessage != "" && got != wantMessage {
		return fmt.Errorf("status message %q", got)
	}
	return nil
}

// checkClientStream sends messages (requests, or grpc.PreparedMsg) on a StreamingInputCall on
// ctx, which must end OK with aggregated as the aggregated payload size.
func (c *interopClient) checkClientStream(ctx context.Context, messages []interface{},
	aggregated int32, options ...grpc.CallOption) error {
	stream, err := c.stub.StreamingInputCall(ctx, options...)
	if err != nil {
		return checkCode(err, codes.OK)
	}
	for i, message := range messages {
		if err := stream.SendMsg(message); err != nil {
			return fmt.Errorf("writing request %d failed: %v", i, err)
		}
	}
	response, err := stream.CloseAndRecv()
	if err := checkCode(err, codes.OK); err != nil {
		return err
	}
	if response.AggregatedPayloadSize != aggregated {
		return fmt.Errorf("aggregated_payload_size %d, wanted %d", response.AggregatedPayloadSize,
			aggregated)
	}
	return nil
}

// checkServerStream makes a StreamingOutputCall asking for parameters, whose responses must all
// arrive, in order, as zeros of their size (and compressed or not, where asked) before the call
// ends OK.
func (c *interopClient) checkServerStream(parameters []*testpb.ResponseParameters) error {
	ctx, cancel := callContext()
	defer cancel()
	ctx, flags := recordFlags(ctx)
	stream, err := c.stub.StreamingOutputCall(ctx,
		&testpb.StreamingOutputCallRequest{ResponseParameters: parameters})
	if err != nil {
		return checkCode(err, codes.OK)
	}
	count := 0
	for ; ; count++ {
		response, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return checkCode(err, codes.OK)
		}
		if count >= len(parameters) {
			return fmt.Errorf("more than %d responses", len(parameters))
		}
		want := parameters[count]
		if err := checkBody(response.GetPayload().GetBody(), int(want.Size)); err != nil {
			return fmt.Errorf("response %d: %v", count, err)
		}
		if want.Compressed == nil {
			continue
		}
		if got, ok := flags.at(count); !ok || got != want.Compressed.Value {
			return fmt.Errorf("response %d: compressed=%t asked, but the compressed flag is %t",
				count, want.Compressed.Value, got)
		}
	}
	if count != len(parameters) {
		return fmt.Errorf("%d responses, wanted %d", count, len(parameters))
	}
	return nil
}

// exchange sends streamingRequest(responseSize, payloadSize) on stream and reads its response,
// which must be responseSize zeros.
func exchange(stream duplexStream, responseSize, payloadSize int) error {
	if err := stream.Send(streamingRequest(responseSize, payloadSize)); err != nil {
		return fmt.Errorf("writing the %d-byte request failed: %v", payloadSize, err)
	}
	response, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("no response to the %d-byte request: %v", payloadSize,
			checkCode(err, codes.OK))
	}
	return checkBody(response.GetPayload().GetBody(), responseSize)
}

type duplexStream = testpb.TestService_FullDuplexCallClient

// withDuplex starts a FullDuplexCall on ctx and runs body on it.
func (c *interopClient) withDuplex(ctx context.Context, body func(stream duplexStream) error) error {
	stream, err := c.stub.FullDuplexCall(ctx)
	if err != nil {
		return checkCode(err, codes.OK)
	}
	return body(stream)
}

// halfCloseAndEnd half-closes stream, which must then end OK without a further response.
func halfCloseAndEnd(stream duplexStream, what string) error {
	if err := stream.CloseSend(); err != nil {
		return fmt.Errorf("half-close failed: %v", err)
	}
	return expectEnd(stream.Recv, what)
}

func (c *interopClient) emptyUnary() error {
	ctx, cancel := callContext()
	defer cancel()
	response, err := c.stub.EmptyCall(ctx, &testpb.Empty{})
	if err := checkCode(err, codes.OK); err != nil {
		return err
	}
	if response == nil {
		return errors.New("no response")
	}
	return nil
}

func (c *interopClient) largeUnary() error {
	ctx, cancel := callContext()
	defer cancel()
	return c.checkUnary(ctx, largeUnaryRequest(), codes.OK, "")
}

func (c *interopClient) clientCompressedUnary() error {
	{
		// The probe: an uncompressed request that claims to be compressed must be refused.
		ctx, cancel := callContext()
		defer cancel()
		request := largeUnaryRequest()
		request.ExpectCompressed = &testpb.BoolValue{Value: true}
		if err := c.checkUnary(ctx, request, codes.InvalidArgument, ""); err != nil {
			return fmt.Errorf("probe: %v", err)
		}
	}
	for _, compressed := range []bool{true, false} {
		ctx, cancel := callContext()
		defer cancel()
		var options []grpc.CallOption
		if compressed {
			options = append(options, grpc.UseCompressor(gzip.Name))
		}
		request := largeUnaryRequest()
		request.ExpectCompressed = &testpb.BoolValue{Value: compressed}
		if err := c.checkUnary(ctx, request, codes.OK, "", options...); err != nil {
			return fmt.Errorf("compressed=%t: %v", compressed, err)
		}
	}
	return nil
}

func (c *interopClient) serverCompressedUnary() error {
	for _, compressed := range []bool{true, false} {
		ctx, cancel := callContext()
		defer cancel()
		ctx, flags := recordFlags(ctx)
		request := largeUnaryRequest()
		request.ResponseCompressed = &testpb.BoolValue{Value: compressed}
		if err := c.checkUnary(ctx, request, codes.OK, ""); err != nil {
			return fmt.Errorf("response_compressed=%t: %v", compressed, err)
		}
		if got, ok := flags.at(0); !ok || got != compressed {
			return fmt.Errorf("response_compressed=%t but the response's compressed flag is %t",
				compressed, got)
		}
	}
	return nil
}

func inputRequest(size int, expectCompressed *testpb.BoolValue) *testpb.StreamingInputCallRequest {
	return &testpb.StreamingInputCallRequest{
		ExpectCompressed: expectCompressed,
		Payload:          &testpb.Payload{Body: make([]byte, size)},
	}
}

func (c *interopClient) clientStreaming() error {
	ctx, cancel := callContext()
	defer cancel()
	var messages []interface{}
	for _, size := range []int{27182, 8, 1828, 45904} {
		messages = append(messages, inputRequest(size, nil))
	}
	return c.checkClientStream(ctx, messages, 74922)
}

func (c *interopClient) clientCompressedStreaming() error {
	// The probe: an uncompressed message that claims to be compressed must be refused.
	probeCtx, cancelProbe := callContext()
	defer cancelProbe()
	probe, err := c.stub.StreamingInputCall(probeCtx)
	if err != nil {
		return fmt.Errorf("probe: %v", checkCode(err, codes.OK))
	}
	// May fail once the server has refused.
	_ = probe.Send(inputRequest(27182, &testpb.BoolValue{Value: true}))
	_, err = probe.CloseAndRecv()
	if err := checkCode(err, codes.InvalidArgument); err != nil {
		return fmt.Errorf("probe: %v", err)
	}

	// The second message is encoded with the probe's (uncompressed) call's codec and
	// compressor: sent with the compressed flag clear on the gzip call.
	uncompressed := &grpc.PreparedMsg{}
	err = uncompressed.Encode(probe, inputRequest(45904, &testpb.BoolValue{Value: false}))
	if err != nil {
		return fmt.Errorf("encoding the uncompressed request failed: %v", err)
	}
	ctx, cancel := callContext()
	defer cancel()
	messages := []interface{}{inputRequest(27182, &testpb.BoolValue{Value: true}), uncompressed}
	return c.checkClientStream(ctx, messages, 73086, grpc.UseCompressor(gzip.Name))
}

func (c *interopClient) serverStreaming() error {
	var parameters []*testpb.ResponseParameters
	for _, size := range []int32{31415, 9, 2653, 58979} {
		parameters = append(parameters, &testpb.ResponseParameters{Size: size})
	}
	return c.checkServerStream(parameters)
}

func (c *interopClient) serverCompressedStreaming() error {
	return c.checkServerStream([]*testpb.ResponseParameters{
		{Size: 31415, Compressed: &testpb.BoolValue{Value: true}},
		{Size: 92653, Compressed: &testpb.BoolValue{Value: false}},
	})
}

func (c *interopClient) pingPong() error {
	ctx, cancel := callContext()
	defer cancel()
	return c.withDuplex(ctx, func(stream duplexStream) error {
		for _, sizes := range [][2]int{{31415, 27182}, {9, 8}, {2653, 1828}, {58979, 45904}} {
			if err := exchange(stream, sizes[0], sizes[1]); err != nil {
				return err
			}
		}
		return halfCloseAndEnd(stream, "after four exchanges")
	})
}

func (c *interopClient) emptyStream() error {
	ctx, cancel := callContext()
	defer cancel()
	return c.withDuplex(ctx, func(stream duplexStream) error {
		return halfCloseAndEnd(stream, "empty stream")
	})
}

func (c *interopClient) timeoutOnSleepingServer() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	stream, err := c.stub.FullDuplexCall(ctx)
	if err != nil {
		// The deadline can pass before the call starts.
		return checkCode(err, codes.DeadlineExceeded)
	}
	// May fail: the deadline can pass before the write.
	_ = stream.Send(&testpb.StreamingOutputCallRequest{
		Payload: &testpb.Payload{Body: make([]byte, 27182)},
	})
	_, err = stream.Recv()
	return checkCode(err, codes.DeadlineExceeded)
}

func (c *interopClient) cancelAfterBegin() error {
	ctx, cancel := callContext()
	defer cancel()
	stream, err := c.stub.StreamingInputCall(ctx)
	if err != nil {
		return checkCode(err, codes.OK)
	}
	cancel()
	// Waits for the response without half-closing: CloseAndRecv would race the cancellation,
	// which grpc-go applies from another goroutine, against a server that answers the half-close
	// at once (seen: grpc-go's own server replying OK first).
	var response testpb.StreamingInputCallResponse
	err = stream.RecvMsg(&response)
	return checkCode(err, codes.Canceled)
}

func (c *interopClient) cancelAfterFirstResponse() error {
	ctx, cancel := callContext()
	defer cancel()
	return c.withDuplex(ctx, func(stream duplexStream) error {
		if err := exchange(stream, 31415, 27182); err != nil {
			return err
		}
		cancel()
		_, err := stream.Recv()
		return checkCode(err, codes.Canceled)
	})
}

func echoContext(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, echoInitialKey, echoInitialValue,
		echoTrailingKey, echoTrailingValue)
}

// checkEchoedMetadata fails unless the server sent the echo keys back.
func checkEchoedMetadata(method string, header, trailer metadata.MD) error {
	if initial := header.Get(echoInitialKey); len(initial) != 1 || initial[0] != echoInitialValue {
		return fmt.Errorf("%s: initial metadata %s is %q", method, echoInitialKey, initial)
	}
	trailing := trailer.Get(echoTrailingKey)
	if len(trailing) != 1 || !bytes.Equal([]byte(trailing[0]), []byte(echoTrailingValue)) {
		return fmt.Errorf("%s: trailing metadata %s is %q, wanted 0xababab", method,
			echoTrailingKey, trailing)
	}
	return nil
}

func (c *interopClient) customMetadata() error {
	{
		ctx, cancel := callContext()
		defer cancel()
		var header, trailer metadata.MD
		err := c.checkUnary(echoContext(ctx), largeUnaryRequest(), codes.OK, "",
			grpc.Header(&header), grpc.Trailer(&trailer))
		if err != nil {
			return err
		}
		if err := checkEchoedMetadata("UnaryCall", header, trailer); err != nil {
			return err
		}
	}
	ctx, cancel := callContext()
	defer cancel()
	return c.withDuplex(echoContext(ctx), func(stream duplexStream) error {
		if err := exchange(stream, 314159, 271828); err != nil {
			return err
		}
		if err := halfCloseAndEnd(stream, "FullDuplexCall"); err != nil {
			return err
		}
		header, err := stream.Header()
		if err != nil {
			return fmt.Errorf("FullDuplexCall: no initial metadata: %v", err)
		}
		return checkEchoedMetadata("FullDuplexCall", header, stream.Trailer())
	})
}

func (c *interopClient) statusCodeAndMessage() error {
	const message = "test status message"
	echo := &testpb.EchoStatus{Code: 2, Message: message}
	{
		ctx, cancel := callContext()
		defer cancel()
		request := &testpb.SimpleRequest{ResponseStatus: echo}
		if err := c.checkUnary(ctx, request, codes.Unknown, message); err != nil {
			return fmt.Errorf("UnaryCall: %v", err)
		}
	}
	ctx, cancel := callContext()
	defer cancel()
	return c.withDuplex(ctx, func(stream duplexStream) error {
		if err := stream.Send(&testpb.StreamingOutputCallRequest{ResponseStatus: echo}); err != nil {
			return fmt.Errorf("writing the request failed: %v", err)
		}
		_ = stream.CloseSend()
		_, err := stream.Recv()
		if err := checkCode(err, codes.Unknown); err != nil {
			return fmt.Errorf("FullDuplexCall: %v", err)
		}
		if got := status.Convert(err).Message(); got != message {
			return fmt.Errorf("FullDuplexCall status message %q", got)
		}
		return nil
	})
}

func (c *interopClient) specialStatusMessage() error {
	ctx, cancel := callContext()
	defer cancel()
	request := &testpb.SimpleRequest{
		ResponseStatus: &testpb.EchoStatus{Code: 2, Message: specialStatusMessage},
	}
	return c.checkUnary(ctx, request, codes.Unknown, specialStatusMessage)
}

func (c *interopClient) unimplementedMethod() error {
	ctx, cancel := callContext()
	defer cancel()
	_, err := c.stub.UnimplementedCall(ctx, &testpb.Empty{})
	return checkCode(err, codes.Unimplemented)
}

func (c *interopClient) unimplementedService() error {
	ctx, cancel := callContext()
	defer cancel()
	_, err := c.unimplemented.UnimplementedCall(ctx, &testpb.Empty{})
	return checkCode(err, codes.Unimplemented)
}

type testCase struct {
	name string
	run  func(*interopClient) error
}

// The order --test_case=all runs them in.
var testCases = []testCase{
	{"empty_unary", (*interopClient).emptyUnary},
	{"large_unary", (*interopClient).largeUnary},
	{"client_compressed_unary", (*interopClient).clientCompressedUnary},
	{"server_compressed_unary", (*interopClient).serverCompressedUnary},
	{"client_streaming", (*interopClient).clientStreaming},
	{"client_compressed_streaming", (*interopClient).clientCompressedStreaming},
	{"server_streaming", (*interopClient).serverStreaming},
	{"server_compressed_streaming", (*interopClient).serverCompressedStreaming},
	{"ping_pong", (*interopClient).pingPong},
	{"empty_stream", (*interopClient).emptyStream},
	{"timeout_on_sleeping_server", (*interopClient).timeoutOnSleepingServer},
	{"cancel_after_begin", (*interopClient).cancelAfterBegin},
	{"cancel_after_first_response", (*interopClient).cancelAfterFirstResponse},
	{"custom_metadata", (*interopClient).customMetadata},
	{"status_code_and_message", (*interopClient).statusCodeAndMessage},
	{"special_status_message", (*interopClient).specialStatusMessage},
	{"unimplemented_method", (*interopClient).unimplementedMethod},
	{"unimplemented_service", (*interopClient).unimplementedService},
}

// selectCases resolves --test_case; nil and an error for an unknown or empty list.
func selectCases(names string) ([]testCase, error) {
	if names == "all" {
		return testCases, nil
	}
	var selected []testCase
	for _, name := range strings.Split(names, ",") {
		found := false
		for _, test := range testCases {
			if test.name == name {
				selected = append(selected, test)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown --test_case: %s", name)
		}
	}
	return selected, nil
}

func main() {
	host := flag.String("server_host", "localhost", "server host")
	port := flag.Int("server_port", 0, "server port")
	hostOverride := flag.String("server_host_override", "", "the :authority of every call")
	cases := flag.String("test_case", "large_unary",
		"one case, a comma-separated list, or all")
	useTLS := flag.Bool("use_tls", false, "must be false: this peer speaks plaintext only")
	flag.Bool("use_test_ca", false, "accepted for compatibility; TLS is not supported")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected argument: %s\n", flag.Arg(0))
		os.Exit(2)
	}
	if *useTLS {
		fmt.Fprintln(os.Stderr, "--use_tls=true is not supported by this peer")
		os.Exit(2)
	}
	if *port <= 0 || *port > 65535 {
		fmt.Fprintf(os.Stderr, "bad --server_port: %d\n", *port)
		os.Exit(2)
	}
	selected, err := selectCases(*cases)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	options := []grpc.DialOption{grpc.WithInsecure(), grpc.WithStatsHandler(flagRecorder{})}
	options = append(options, advertiseEncodings()...)
	if *hostOverride != "" {
		options = append(options, grpc.WithAuthority(*hostOverride))
	}
	conn, err := grpc.Dial(net.JoinHostPort(*host, strconv.Itoa(*port)), options...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot create the channel: %v\n", err)
		os.Exit(1)
	}
	defer conn.Close()
	client := &interopClient{
		stub:          testpb.NewTestServiceClient(conn),
		unimplemented: testpb.NewUnimplementedServiceClient(conn),
	}

	failed := 0
	for _, test := range selected {
		if err := test.run(client); err != nil {
			fmt.Printf("FAIL %s: %v\n", test.name, err)
			failed++
		} else {
			fmt.Printf("PASS %s\n", test.name)
		}
	}
	if len(selected) > 1 {
		fmt.Printf("interop client: %d of %d cases passed\n", len(selected)-failed, len(selected))
	}
	if failed > 0 {
		conn.Close()
		os.Exit(1)
	}
}
