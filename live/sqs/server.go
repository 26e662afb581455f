package sqs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures an endpoint.
type Config struct {
	// Node is the ID of the node the endpoint runs beside; receipt
	// handles carry it.
	Node uint32
	// Region is the region requests must be signed for. Default
	// us-east-1.
	Region string
	// AccountID is the account queue URLs and ARNs name. Default
	// 000000000000.
	AccountID string
	// Keys are the access keys accepted. At least one is required.
	Keys []AccessKey
	// Backend serves the queues.
	Backend Backend
	// Logger receives the endpoint's logs. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock signatures are checked against. Default
	// time.Now.
	Now func() time.Time
	// HandleSecret keys receipt handles. Every endpoint of a cluster
	// must use the same one to take the others' handles. Default:
	// derived from Keys, so endpoints that accept the same keys agree.
	HandleSecret []byte
}

// Defaults for Config.
const (
	DefaultRegion    = "us-east-1"
	DefaultAccountID = "000000000000"
)

// Server is an SQS endpoint: an http.Handler that verifies signatures,
// speaks the JSON and query protocols, and maps the actions onto a
// Backend.
type Server struct {
	cfg      Config
	verifier verifier
	handles  handleSigner
	log      *slog.Logger
}

// New checks cfg and builds the endpoint.
func New(cfg Config) (*Server, error) {
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.AccountID == "" {
		cfg.AccountID = DefaultAccountID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Backend == nil {
		return nil, errors.New("sqs: Config.Backend is required")
	}
	if len(cfg.Keys) == 0 {
		return nil, errors.New("sqs: Config.Keys is empty: the endpoint would accept no request")
	}
	keys := map[string]AccessKey{}
	for i, k := range cfg.Keys {
		switch {
		case k.ID == "" || k.Secret == "":
			return nil, fmt.Errorf("sqs: Keys[%d] needs both an ID and a secret", i)
		case keys[k.ID] != AccessKey{}:
			return nil, fmt.Errorf("sqs: access key %q is listed twice", k.ID)
		}
		keys[k.ID] = k
	}
	if len(cfg.HandleSecret) == 0 {
		cfg.HandleSecret = handleSecret(cfg.Keys)
	}
	// The start tells this process's handles from those an earlier
	// process of the same node made, whose backend lease numbers mean
	// nothing now.
	var start [4]byte
	rand.Read(start[:])
	return &Server{
		cfg:      cfg,
		verifier: verifier{region: cfg.Region, keys: keys, now: cfg.Now},
		handles:  handleSigner{node: cfg.Node, start: binary.BigEndian.Uint32(start[:]), secret: cfg.HandleSecret},
		log:      cfg.Logger,
	}, nil
}

// requestBytesMax bounds a request body: a full batch of the largest
// messages, base64 and protocol overhead included.
const requestBytesMax = 2 << 20

// call is one request being served.
type call struct {
	action string
	json   bool
	body   []byte
	form   url.Values
	key    AccessKey
	id     string
	// base is the scheme and host queue URLs are built on: the host the
	// client addressed, so URLs lead back through the same load balancer.
	base string
	path string
}

// decode fills an action's input from the request, by protocol.
func (c *call) decode(v any) *apiError {
	if !c.json {
		return decodeForm(c.form, v)
	}
	if len(c.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return errInvalidParameter("The request body is not valid JSON for %s: %v", c.action, err)
	}
	return nil
}

// ServeHTTP serves one SQS request.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	c := &call{id: requestID(), base: baseURL(req), path: req.URL.Path}
	c.json = req.Header.Get("X-Amz-Target") != ""
	out, aerr := s.serve(req, c)
	if aerr != nil {
		if aerr.status >= 500 {
			s.log.Warn("SQS request failed", slog.String("action", c.action), slog.String("code", aerr.code), slog.String("err", aerr.message))
		}
		s.writeError(w, c, aerr)
		return
	}
	s.writeOutput(w, c, out)
}

// serve reads, authenticates and dispatches the request.
func (s *Server) serve(req *http.Request, c *call) (any, *apiError) {
	if req.Method != http.MethodPost && req.Method != http.MethodGet {
		return nil, errInvalidAction(req.Method + " " + req.URL.Path)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, requestBytesMax+1))
	if err != nil {
		return nil, errMalformed("reading the request body: %v", err)
	}
	if len(body) > requestBytesMax {
		return nil, errMalformed("the request body is over %d bytes", requestBytesMax)
	}
	c.body = body
	if aerr := c.parseAction(req); aerr != nil {
		return nil, aerr
	}
	key, aerr := s.verifier.verify(req, body)
	if aerr != nil {
		return nil, aerr
	}
	c.key = key
	act, ok := actions[c.action]
	if !ok {
		return nil, errInvalidAction(c.action)
	}
	return act(req.Context(), s, c)
}

// parseAction reads the action's name and, for the query protocol, its
// parameters.
func (c *call) parseAction(req *http.Request) *apiError {
	if c.json {
		target := req.Header.Get("X-Amz-Target")
		action, ok := strings.CutPrefix(target, "AmazonSQS.")
		if !ok {
			return errInvalidAction(target)
		}
		c.action = action
		return nil
	}
	form := req.URL.Query()
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" {
		posted, err := url.ParseQuery(string(c.body))
		if err != nil {
			return errMalformed("the form body does not parse: %v", err)
		}
		for k, v := range posted {
			form[k] = append(form[k], v...)
		}
	}
	c.form = form
	c.action = form.Get("Action")
	if c.action == "" {
		return errMissingParameter("Action")
	}
	return nil
}

func (s *Server) writeOutput(w http.ResponseWriter, c *call, out any) {
	w.Header().Set("X-Amzn-RequestId", c.id)
	if c.json {
		b, err := json.Marshal(out)
		if err != nil {
			s.writeError(w, c, errInternal("encoding the response: "+err.Error()))
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Write(encodeXML(c.action, c.id, out))
}

func (s *Server) writeError(w http.ResponseWriter, c *call, e *apiError) {
	w.Header().Set("X-Amzn-RequestId", c.id)
	if c.json {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Query-Error", e.code+";"+e.fault())
		w.WriteHeader(e.status)
		b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + e.shape, "message": e.message})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.status)
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<ErrorResponse xmlns="` + xmlNamespace + `"><Error><Type>` + e.fault() + `</Type><Code>`)
	b.WriteString(xmlText(e.code) + "</Code><Message>" + xmlText(e.message) + "</Message><Detail/></Error><RequestId>")
	b.WriteString(c.id + "</RequestId></ErrorResponse>")
	w.Write([]byte(b.String()))
}

// requestID draws a request ID in SQS's UUID form.
func requestID() string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// baseURL is the scheme and host the client addressed.
func baseURL(req *http.Request) string {
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + req.Host
}

// actionFunc serves one action.
type actionFunc func(ctx context.Context, s *Server, c *call) (any, *apiError)

// actions maps each action's name to its implementation; actions SQS has
// and cairn cannot serve yet answer with UnsupportedOperation, naming
// what is missing.
var actions map[string]actionFunc

func init() {
	actions = map[string]actionFunc{
		"CreateQueue":                  createQueue,
		"GetQueueUrl":                  getQueueURL,
		"ListQueues":                   listQueues,
		"DeleteQueue":                  deleteQueue,
		"GetQueueAttributes":           getQueueAttributes,
		"SetQueueAttributes":           setQueueAttributes,
		"SendMessage":                  sendMessage,
		"SendMessageBatch":             sendMessageBatch,
		"ReceiveMessage":               receiveMessage,
		"DeleteMessage":                deleteMessage,
		"DeleteMessageBatch":           deleteMessageBatch,
		"ChangeMessageVisibility":      changeVisibility,
		"ChangeMessageVisibilityBatch": changeVisibilityBatch,
		"PurgeQueue":                   purgeQueue,
	}
	for name, why := range unsupportedActions {
		actions[name] = func(context.Context, *Server, *call) (any, *apiError) {
			return nil, errUnsupported("%s is not supported by cairn's SQS endpoint: %s.", name, why)
		}
	}
}

// unsupportedActions are SQS actions cairn does not serve, with why.
var unsupportedActions = map[string]string{
	"ListDeadLetterSourceQueues": "the endpoint does not list a dead-letter queue's sources yet (RedrivePolicy itself is served)",
	"StartMessageMoveTask":       "cairn cannot move messages out of a dead-letter queue yet",
	"CancelMessageMoveTask":      "cairn cannot move messages out of a dead-letter queue yet",
	"ListMessageMoveTasks":       "cairn cannot move messages out of a dead-letter queue yet",
	"TagQueue":                   "cairn stores no queue tags",
	"UntagQueue":                 "cairn stores no queue tags",
	"ListQueueTags":              "cairn stores no queue tags",
	"AddPermission":              "access is granted by the endpoint's access keys and their cairn roles, not by queue policies",
	"RemovePermission":           "access is granted by the endpoint's access keys and their cairn roles, not by queue policies",
}

func xmlText(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
