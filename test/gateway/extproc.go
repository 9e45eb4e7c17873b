package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	envoycorev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// DestinationEndpointHeader is the header in which the endpoint picker
// names the endpoint (ip:port) it chose.
const DestinationEndpointHeader = "x-gateway-destination-endpoint"

// pick is one request's exchange with an endpoint picker, as Envoy holds
// it with ext_proc in FULL_DUPLEX_STREAMED mode for both bodies.
type pick struct {
	stream extprocv3.ExternalProcessor_ProcessClient
	// Endpoint is the chosen ip:port.
	Endpoint string
	// SetHeaders and RemoveHeaders mutate the request.
	SetHeaders    map[string]string
	RemoveHeaders []string
	// Body is the request body to forward (the picker's mutation).
	Body []byte
	// Immediate is set when the picker answers the request itself (no
	// endpoint left: 503, shed: 429, bad request: 400...).
	Immediate *immediate
}

type immediate struct {
	Status int
	Body   []byte
}

// errPicker is a failure of the endpoint picker itself (unreachable, a
// broken stream), for failureMode to decide about; an answer it gives is not
// one.
type errPicker struct{ err error }

func (e errPicker) Error() string { return "endpoint picker: " + e.err.Error() }
func (e errPicker) Unwrap() error { return e.err }

func headerMap(h http.Header, pseudo map[string]string) *envoycorev3.HeaderMap {
	m := &envoycorev3.HeaderMap{}
	for k, v := range pseudo {
		m.Headers = append(m.Headers, &envoycorev3.HeaderValue{Key: k, RawValue: []byte(v)})
	}
	for k, vs := range h {
		for _, v := range vs {
			m.Headers = append(m.Headers, &envoycorev3.HeaderValue{Key: strings.ToLower(k), RawValue: []byte(v)})
		}
	}
	return m
}

// startPick sends the request's headers and body and reads the picker's
// answers to both.
func startPick(ctx context.Context, client extprocv3.ExternalProcessorClient, r *http.Request, path string, body []byte) (*pick, error) {
	stream, err := client.Process(ctx)
	if err != nil {
		return nil, errPicker{err}
	}
	p := &pick{stream: stream, SetHeaders: map[string]string{}, Body: body}
	pseudo := map[string]string{":method": r.Method, ":path": path, ":authority": r.Host, ":scheme": "http"}
	if err := stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: headerMap(r.Header, pseudo)},
	}}); err != nil {
		return nil, errPicker{err}
	}
	if err := stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true},
	}}); err != nil {
		return nil, errPicker{err}
	}
	var newBody []byte
	gotHeaders, bodyDone := false, false
	for !gotHeaders || !bodyDone {
		resp, err := stream.Recv()
		if err != nil {
			return nil, errPicker{fmt.Errorf("no answer to the request: %w", err)}
		}
		switch v := resp.Response.(type) {
		case *extprocv3.ProcessingResponse_ImmediateResponse:
			code := int(v.ImmediateResponse.GetStatus().GetCode())
			if code == 0 {
				code = http.StatusInternalServerError
			}
			p.Immediate = &immediate{Status: code, Body: v.ImmediateResponse.GetBody()}
			_ = stream.CloseSend()
			return p, nil
		case *extprocv3.ProcessingResponse_RequestHeaders:
			gotHeaders = true
			mut := v.RequestHeaders.GetResponse().GetHeaderMutation()
			for _, h := range mut.GetSetHeaders() {
				val := string(h.GetHeader().GetRawValue())
				if val == "" {
					val = h.GetHeader().GetValue()
				}
				p.SetHeaders[strings.ToLower(h.GetHeader().GetKey())] = val
			}
			p.RemoveHeaders = append(p.RemoveHeaders, mut.GetRemoveHeaders()...)
		case *extprocv3.ProcessingResponse_RequestBody:
			mut := v.RequestBody.GetResponse().GetBodyMutation()
			switch {
			case mut.GetStreamedResponse() != nil:
				newBody = append(newBody, mut.GetStreamedResponse().GetBody()...)
				if mut.GetStreamedResponse().GetEndOfStream() {
					p.Body, bodyDone = newBody, true
				}
			case mut.GetBody() != nil:
				p.Body, bodyDone = mut.GetBody(), true
			default:
				bodyDone = true
			}
		default:
			return nil, errPicker{fmt.Errorf("unexpected answer %T to the request", v)}
		}
	}
	p.Endpoint = p.SetHeaders[DestinationEndpointHeader]
	if p.Endpoint == "" {
		return nil, errPicker{errors.New("the answer names no endpoint (" + DestinationEndpointHeader + ")")}
	}
	// A list of endpoints: the first one is the choice.
	p.Endpoint, _, _ = strings.Cut(p.Endpoint, ",")
	delete(p.SetHeaders, DestinationEndpointHeader)
	delete(p.SetHeaders, "content-length")
	return p, nil
}

// respond passes the backend's response through the picker's response
// phases (so its response plugins run) to w: headers, then the body chunk by
// chunk as the picker returns it. A picker that fails mid-way ends the
// response; before the headers are written it falls back to the
// response as the backend sent it.
func (p *pick) respond(w http.ResponseWriter, resp *http.Response) error {
	hdr := headerMap(resp.Header, map[string]string{":status": strconv.Itoa(resp.StatusCode)})
	if err := p.stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: hdr},
	}}); err != nil {
		return passThrough(w, resp, err)
	}
	answer, err := p.stream.Recv()
	if err != nil {
		return passThrough(w, resp, err)
	}
	hr, ok := answer.Response.(*extprocv3.ProcessingResponse_ResponseHeaders)
	if !ok {
		return passThrough(w, resp, fmt.Errorf("unexpected answer %T to the response headers", answer.Response))
	}
	copyHeader(w.Header(), resp.Header)
	w.Header().Del("Content-Length") // the picker may change the body
	for _, h := range hr.ResponseHeaders.GetResponse().GetHeaderMutation().GetSetHeaders() {
		val := string(h.GetHeader().GetRawValue())
		if val == "" {
			val = h.GetHeader().GetValue()
		}
		w.Header().Set(h.GetHeader().GetKey(), val)
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)

	sendErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, rerr := resp.Body.Read(buf)
			eos := rerr != nil
			if n > 0 || eos {
				if err := p.stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
					ResponseBody: &extprocv3.HttpBody{Body: append([]byte(nil), buf[:n]...), EndOfStream: eos},
				}}); err != nil {
					sendErr <- err
					return
				}
			}
			if eos {
				if errors.Is(rerr, io.EOF) {
					rerr = nil
				}
				sendErr <- rerr
				return
			}
		}
	}()
	for {
		answer, err := p.stream.Recv()
		if err != nil {
			return fmt.Errorf("endpoint picker: response body: %w", err)
		}
		br, ok := answer.Response.(*extprocv3.ProcessingResponse_ResponseBody)
		if !ok {
			continue
		}
		sr := br.ResponseBody.GetResponse().GetBodyMutation().GetStreamedResponse()
		if len(sr.GetBody()) > 0 {
			if _, err := w.Write(sr.GetBody()); err != nil {
				return err
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if sr.GetEndOfStream() {
			break
		}
	}
	_ = p.stream.CloseSend()
	return <-sendErr
}

// close ends an exchange that is not followed by a response.
func (p *pick) close() {
	if p != nil && p.stream != nil {
		_ = p.stream.CloseSend()
	}
}

func passThrough(w http.ResponseWriter, resp *http.Response, cause error) error {
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, err := io.Copy(w, resp.Body)
	if err != nil {
		return err
	}
	return fmt.Errorf("endpoint picker: response passed through unprocessed: %w", cause)
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}
