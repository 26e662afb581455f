package sqs

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSignatureVector checks the signing chain against the "get-vanilla"
// case of AWS's Signature Version 4 test suite (a published vector, not
// one computed here).
func TestSignatureVector(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://example.amazonaws.com/", nil)
	req.Header.Set("X-Amz-Date", "20150830T123600Z")
	canonical, aerr := canonicalRequest(req, nil, []string{"host", "x-amz-date"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	wantCanonical := "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" +
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if canonical != wantCanonical {
		t.Fatalf("canonical request:\n%s\nwant:\n%s", canonical, wantCanonical)
	}
	got := signature("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830T123600Z", "20150830", "us-east-1", "service", canonical)
	if want := "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

func TestCanonicalQuerySortsAndEncodes(t *testing.T) {
	got := canonicalQuery("b=2&a=x+y&a=%2F&c")
	if want := "a=%2F&a=x%20y&b=2&c="; got != want {
		t.Fatalf("canonicalQuery = %q, want %q", got, want)
	}
}

// TestAuthenticationErrors checks each refusal's code and status, in the
// query protocol's XML and the JSON protocol's headers.
func TestAuthenticationErrors(t *testing.T) {
	hs, _, now := testServer(t)
	form := url.Values{"Action": {"ListQueues"}}
	cases := []struct {
		name   string
		keyID  string
		secret string
		when   time.Time
		code   string
		status int
	}{
		{"unknown key", "AKIDNOBODY", testSecret, now, "InvalidClientTokenId", 403},
		{"wrong secret", testKeyID, "not-the-secret", now, "SignatureDoesNotMatch", 403},
		{"stale date", testKeyID, testSecret, now.Add(-20 * time.Minute), "RequestExpired", 400},
		{"future date", testKeyID, testSecret, now.Add(20 * time.Minute), "RequestExpired", 400},
	}
	for _, tc := range cases {
		status, body := queryCall(t, hs, now, tc.keyID, tc.secret, form)
		if tc.when != now {
			body2 := []byte(form.Encode())
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/", strings.NewReader(string(body2)))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			sign(req, body2, tc.keyID, tc.secret, tc.when)
			status, body = do(t, req)
		}
		if status != tc.status || between(body, "Code") != tc.code || between(body, "Type") != "Sender" {
			t.Errorf("%s: HTTP %d %s, want %d with code %s", tc.name, status, body, tc.status, tc.code)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if status, body := do(t, req); status != 403 || between(body, "Code") != "MissingAuthenticationToken" {
		t.Errorf("unsigned: HTTP %d %s, want 403 MissingAuthenticationToken", status, body)
	}
	req, _ = http.NewRequest(http.MethodPost, hs.URL+"/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDCLIENT/20260304/eu-west-1/sqs/aws4_request")
	if status, body := do(t, req); status != 400 || between(body, "Code") != "IncompleteSignature" {
		t.Errorf("no signature: HTTP %d %s, want 400 IncompleteSignature", status, body)
	}
	// A body altered after signing no longer matches.
	body := []byte(form.Encode())
	req, _ = http.NewRequest(http.MethodPost, hs.URL+"/", strings.NewReader("Action=DeleteQueue"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sign(req, body, testKeyID, testSecret, now)
	if status, body := do(t, req); status != 403 || between(body, "Code") != "SignatureDoesNotMatch" {
		t.Errorf("altered body: HTTP %d %s, want 403 SignatureDoesNotMatch", status, body)
	}
}

func TestJSONErrorCarriesShapeAndQueryCode(t *testing.T) {
	hs, _, now := testServer(t)
	status, body, h := jsonCall(t, hs, now, "GetQueueUrl", `{"QueueName":"missing"}`)
	if status != 400 || !strings.Contains(body, `"__type":"com.amazonaws.sqs#QueueDoesNotExist"`) ||
		h.Get("X-Amzn-Query-Error") != "AWS.SimpleQueueService.NonExistentQueue;Sender" {
		t.Fatalf("HTTP %d %s (query error %q)", status, body, h.Get("X-Amzn-Query-Error"))
	}
	status, body, _ = jsonCall(t, hs, now, "PurgeQueue", `{"QueueUrl":"http://x/000000000000/q"}`)
	if status != 400 || !strings.Contains(body, `"__type":"com.amazonaws.sqs#QueueDoesNotExist"`) {
		t.Fatalf("PurgeQueue of a missing queue: HTTP %d %s, want QueueDoesNotExist", status, body)
	}
}

// TestQueryProtocolRoundTrip drives create, send (with attributes),
// receive, attributes and delete through form requests and XML answers.
func TestQueryProtocolRoundTrip(t *testing.T) {
	hs, b, now := testServer(t)
	call := func(form url.Values) string {
		t.Helper()
		status, body := queryCall(t, hs, now, testKeyID, testSecret, form)
		if status != 200 {
			t.Fatalf("%s: HTTP %d %s", form.Get("Action"), status, body)
		}
		if !strings.Contains(body, `xmlns="`+xmlNamespace+`"`) || between(body, "RequestId") == "" {
			t.Fatalf("%s: no namespace or request ID in %s", form.Get("Action"), body)
		}
		return body
	}
	body := call(url.Values{"Action": {"CreateQueue"}, "QueueName": {"orders"}, "Attribute.1.Name": {"VisibilityTimeout"}, "Attribute.1.Value": {"30"}})
	qurl := between(body, "QueueUrl")
	if !strings.HasSuffix(qurl, "/000000000000/orders") {
		t.Fatalf("queue URL %q", qurl)
	}
	body = call(url.Values{"Action": {"SendMessage"}, "QueueUrl": {qurl}, "MessageBody": {"hello <world> & co"},
		"MessageAttribute.1.Name": {"color"}, "MessageAttribute.1.Value.DataType": {"String"}, "MessageAttribute.1.Value.StringValue": {"blue"}})
	if between(body, "MD5OfMessageBody") != md5Hex("hello <world> & co") || between(body, "MD5OfMessageAttributes") == "" {
		t.Fatalf("send answer %s", body)
	}
	body = call(url.Values{"Action": {"GetQueueAttributes"}, "QueueUrl": {qurl}, "AttributeName.1": {"All"}})
	if !containsAll(body, "<Name>ApproximateNumberOfMessages</Name><Value>1</Value>", "<Name>QueueArn</Name><Value>arn:aws:sqs:eu-west-1:000000000000:orders</Value>") {
		t.Fatalf("attributes %s", body)
	}
	body = call(url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {qurl}, "MessageAttributeName.1": {"All"}, "AttributeName.1": {"ApproximateReceiveCount"}})
	if between(body, "Body") != "hello &lt;world&gt; &amp; co" || !containsAll(body, "<StringValue>blue</StringValue>", "<Name>ApproximateReceiveCount</Name><Value>1</Value>") {
		t.Fatalf("receive %s", body)
	}
	call(url.Values{"Action": {"DeleteMessage"}, "QueueUrl": {qurl}, "ReceiptHandle": {between(body, "ReceiptHandle")}})
	if st, _ := b.Stats(t.Context(), "orders"); st.Ready+st.Leased != 0 {
		t.Fatalf("after delete the fake holds %+v", st)
	}
	// The same handle again: its lease is gone.
	status, body := queryCall(t, hs, now, testKeyID, testSecret, url.Values{"Action": {"DeleteMessage"}, "QueueUrl": {qurl}, "ReceiptHandle": {between(body, "ReceiptHandle")}})
	if status != 400 || between(body, "Code") != "ReceiptHandleIsInvalid" {
		t.Fatalf("second delete: HTTP %d %s", status, body)
	}
}

func TestDeleteQueueNeedsAdmin(t *testing.T) {
	hs, b, now := testServer(t)
	b.CreateQueue(t.Context(), "q", QueueOptions{})
	form := url.Values{"Action": {"DeleteQueue"}, "QueueUrl": {"http://h/000000000000/q"}}
	if status, body := queryCall(t, hs, now, testKeyID, testSecret, form); status != 403 || between(body, "Code") != "AccessDenied" {
		t.Fatalf("client key: HTTP %d %s", status, body)
	}
	if status, body := queryCall(t, hs, now, testAdmin, "admin-secret-key", form); status != 200 {
		t.Fatalf("admin key: HTTP %d %s", status, body)
	}
	if names, _ := b.QueueNames(t.Context()); len(names) != 0 {
		t.Fatalf("queues left: %v", names)
	}
}

// TestAttributesMD5 checks the digest against bytes laid out by hand as
// SQS documents them: length-prefixed name, type, transport byte, value.
func TestAttributesMD5(t *testing.T) {
	s := "blue"
	attrs := map[string]messageAttribute{
		"color": {DataType: "String", StringValue: &s},
		"blob":  {DataType: "Binary", BinaryValue: []byte{1, 2, 3}},
	}
	var want []byte
	put := func(b []byte) { want = binary.BigEndian.AppendUint32(want, uint32(len(b))); want = append(want, b...) }
	put([]byte("blob"))
	put([]byte("Binary"))
	want = append(want, 2)
	put([]byte{1, 2, 3})
	put([]byte("color"))
	put([]byte("String"))
	want = append(want, 1)
	put([]byte("blue"))
	sum := md5.Sum(want)
	if got := attributesMD5(attrs); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("attributesMD5 = %s, want %s", got, hex.EncodeToString(sum[:]))
	}
}

func TestEnvelopeRoundTripAndForeignPayloads(t *testing.T) {
	s := "v"
	e := envelope{Body: "b", SentMillis: 42, SenderID: "k", Attributes: map[string]messageAttribute{"a": {DataType: "Number", StringValue: &s}}}
	got := decodeEnvelope(e.encode())
	if got.Body != "b" || got.SentMillis != 42 || got.SenderID != "k" || deref(got.Attributes["a"].StringValue) != "v" {
		t.Fatalf("round trip: %+v", got)
	}
	truncated := e.encode()
	truncated = truncated[:len(truncated)-1]
	if got := decodeEnvelope(truncated); got.Body != string(truncated) {
		t.Fatalf("a truncated envelope must read as a foreign body, got %+v", got)
	}
	if got := decodeEnvelope([]byte("plain")); got.Body != "plain" || got.Attributes != nil {
		t.Fatalf("foreign payload: %+v", got)
	}
}

func TestReceiptHandles(t *testing.T) {
	secret := handleSecret([]AccessKey{{ID: "B", Secret: "second-secret"}, {ID: "A", Secret: "first-secret"}})
	s := handleSigner{node: 1, start: 70, secret: secret}
	r := receipt{Node: 1, Start: 70, Queue: "q", Lease: 9, Grant: 1 << 62, Message: MessageID{Producer: 3, Seq: 4}}
	h := s.mint(r)
	want := Receipt{Lease: 9, Local: true, ID: r.Message, Grant: r.Grant}
	if got, aerr := s.open(h, "q"); aerr != nil || got != want {
		t.Fatalf("open(mint) = %+v, %v; want %+v", got, aerr, want)
	}
	if _, aerr := s.open(h, "other"); aerr == nil {
		t.Fatal("a handle opened for another queue")
	}
	// Base64 decoders skip line breaks, so a handle with one decodes to
	// the same bytes; it is still not the handle that was minted.
	if _, aerr := s.open(h[:10]+"\n"+h[10:], "q"); aerr == nil {
		t.Fatal("a handle with a line break in it opened")
	}
	b := []byte(h)
	b[10] ^= 1
	if _, aerr := s.open(string(b), "q"); aerr == nil || aerr.code != "ReceiptHandleIsInvalid" {
		t.Fatalf("an altered handle: %v", aerr)
	}
	// Another node's endpoint, or this node's after a restart, takes the
	// handle as another's: by the message and the owner's lease.
	want.Local = false
	sameKeys := handleSecret([]AccessKey{{ID: "A", Secret: "first-secret"}, {ID: "B", Secret: "second-secret"}})
	for _, other := range []*handleSigner{{node: 2, start: 70, secret: sameKeys}, {node: 1, start: 71, secret: sameKeys}} {
		if got, aerr := other.open(h, "q"); aerr != nil || got != want {
			t.Fatalf("n%d (start %d) opened the handle as %+v, %v; want %+v", other.node, other.start, got, aerr, want)
		}
	}
	otherKeys := handleSigner{node: 2, secret: handleSecret([]AccessKey{{ID: "A", Secret: "first-secret"}})}
	if _, aerr := otherKeys.open(h, "q"); aerr == nil || !strings.Contains(aerr.message, "same keys") {
		t.Fatalf("an endpoint with other keys opened the handle: %v", aerr)
	}
}

// TestBatchValidation checks the whole-request batch errors and a
// partial failure.
func TestBatchValidation(t *testing.T) {
	hs, b, now := testServer(t)
	b.CreateQueue(t.Context(), "q", QueueOptions{})
	qurl := `"QueueUrl":"http://h/000000000000/q"`
	cases := []struct{ body, want string }{
		{`{` + qurl + `,"Entries":[]}`, "EmptyBatchRequest"},
		{`{` + qurl + `,"Entries":[{"Id":"a","MessageBody":"x"},{"Id":"a","MessageBody":"y"}]}`, "BatchEntryIdsNotDistinct"},
		{`{` + qurl + `,"Entries":[{"Id":"a b","MessageBody":"x"}]}`, "InvalidBatchEntryId"},
		{`{` + qurl + `,"Entries":[` + strings.Repeat(`{"Id":"x","MessageBody":"x"},`, 10) + `{"Id":"y","MessageBody":"x"}]}`, "TooManyEntriesInBatchRequest"},
	}
	for _, tc := range cases {
		if status, body, _ := jsonCall(t, hs, now, "SendMessageBatch", tc.body); status != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("HTTP %d %s, want %s", status, body, tc.want)
		}
	}
	status, body, _ := jsonCall(t, hs, now, "SendMessageBatch", `{`+qurl+`,"Entries":[{"Id":"ok","MessageBody":"x"},{"Id":"bad","MessageBody":"x","DelaySeconds":901}]}`)
	if status != 200 || !containsAll(body, `"Id":"ok"`, `"Id":"bad"`, `"Code":"InvalidParameterValue"`, `"SenderFault":true`) {
		t.Fatalf("partial failure: HTTP %d %s", status, body)
	}
	if st, _ := b.Stats(t.Context(), "q"); st.Ready != 1 {
		t.Fatalf("the valid entry was not stored alone: %+v", st)
	}
}

func TestUnsupportedAttributesAreRefusedByName(t *testing.T) {
	hs, _, now := testServer(t)
	cases := []struct{ body, want string }{
		{`{"QueueName":"q","Attributes":{"RedrivePolicy":"{}"}}`, "maxReceiveCount"},
		{`{"QueueName":"q","Attributes":{"VisibilityTimeout":"60"}}`, "InvalidAttributeValue"},
		{`{"QueueName":"q","Attributes":{"Colour":"red"}}`, "InvalidAttributeName"},
		{`{"QueueName":"q.fifo"}`, "FIFO"},
	}
	for _, tc := range cases {
		if status, body, _ := jsonCall(t, hs, now, "CreateQueue", tc.body); status != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: HTTP %d %s, want %s", tc.body, status, body, tc.want)
		}
	}
}

// A RedrivePolicy at creation names an existing queue of this endpoint
// by its ARN and a receive count from 1 to 1000; the backend gets both,
// GetQueueAttributes gives the policy back, and anything else is refused
// with the reason.
func TestRedrivePolicyCreatesADeadLetterQueue(t *testing.T) {
	hs, b, now := testServer(t)
	b.CreateQueue(t.Context(), "parked", QueueOptions{})
	arn := "arn:aws:sqs:" + testRegion + ":000000000000:"
	policy := func(target, count string) string {
		return fmt.Sprintf(`{"QueueName":"q","Attributes":{"RedrivePolicy":%q}}`,
			fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":%s}`, target, count))
	}
	for _, tc := range []struct{ body, want string }{
		{policy(arn+"missing", "5"), "Dead letter target does not exist"},
		{policy("arn:aws:sqs:elsewhere-1:000000000000:parked", "5"), "not a queue ARN of this endpoint"},
		{policy(arn+"parked", "0"), "valid values are from 1 to 1000"},
		{policy(arn+"parked", `"1001"`), "valid values are from 1 to 1000"},
		{policy(arn+"q", "3"), "cannot be its own dead-letter queue"},
	} {
		if status, body, _ := jsonCall(t, hs, now, "CreateQueue", tc.body); status != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: HTTP %d %s, want %s", tc.body, status, body, tc.want)
		}
	}
	if status, body, _ := jsonCall(t, hs, now, "CreateQueue", policy(arn+"parked", `"4"`)); status != 200 {
		t.Fatalf("a valid redrive policy: HTTP %d %s", status, body)
	}
	if st, _ := b.Stats(t.Context(), "q"); st.DeadLetter != "parked" || st.MaxReceiveCount != 4 {
		t.Fatalf("the backend created %+v, want parked after 4", st)
	}
	status, body, _ := jsonCall(t, hs, now, "GetQueueAttributes", `{"QueueUrl":"http://x/000000000000/q","AttributeNames":["RedrivePolicy"]}`)
	if status != 200 || !containsAll(body, `deadLetterTargetArn`, arn+`parked`, `maxReceiveCount`) {
		t.Fatalf("GetQueueAttributes RedrivePolicy: HTTP %d %s", status, body)
	}
}

// TestChangeVisibilityBatch: 0 hands a message back; any other timeout
// fails its entry alone, naming the missing lease extension.
func TestChangeVisibilityBatch(t *testing.T) {
	hs, b, now := testServer(t)
	b.CreateQueue(t.Context(), "q", QueueOptions{})
	qurl := "http://h/000000000000/q"
	for _, body := range []string{"one", "two"} {
		if status, answer := queryCall(t, hs, now, testKeyID, testSecret, url.Values{"Action": {"SendMessage"}, "QueueUrl": {qurl}, "MessageBody": {body}}); status != 200 {
			t.Fatalf("send: HTTP %d %s", status, answer)
		}
	}
	_, got := queryCall(t, hs, now, testKeyID, testSecret, url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {qurl}, "MaxNumberOfMessages": {"2"}})
	var handles []string
	for _, part := range strings.Split(got, "<ReceiptHandle>")[1:] {
		handles = append(handles, part[:strings.Index(part, "</ReceiptHandle>")])
	}
	if len(handles) != 2 {
		t.Fatalf("received %s", got)
	}
	status, answer := queryCall(t, hs, now, testKeyID, testSecret, url.Values{"Action": {"ChangeMessageVisibilityBatch"}, "QueueUrl": {qurl},
		"ChangeMessageVisibilityBatchRequestEntry.1.Id": {"back"}, "ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle": {handles[0]},
		"ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout": {"0"},
		"ChangeMessageVisibilityBatchRequestEntry.2.Id":                {"longer"}, "ChangeMessageVisibilityBatchRequestEntry.2.ReceiptHandle": {handles[1]},
		"ChangeMessageVisibilityBatchRequestEntry.2.VisibilityTimeout": {"60"},
		"ChangeMessageVisibilityBatchRequestEntry.3.Id":                {"too-long"}, "ChangeMessageVisibilityBatchRequestEntry.3.ReceiptHandle": {handles[1]},
		"ChangeMessageVisibilityBatchRequestEntry.3.VisibilityTimeout": {"43201"}})
	if status != 200 || !containsAll(answer, "<ChangeMessageVisibilityBatchResultEntry><Id>back</Id>",
		"<ChangeMessageVisibilityBatchResultEntry><Id>longer</Id>", "<Id>too-long</Id>", "<Code>InvalidParameterValue</Code>") {
		t.Fatalf("HTTP %d %s", status, answer)
	}
	if st, _ := b.Stats(t.Context(), "q"); st.Ready != 1 || st.Leased != 1 {
		t.Fatalf("after the batch the fake holds %+v, want one handed back and one still leased", st)
	}
	if len(b.extended) != 1 || b.extended[0] != time.Minute {
		t.Fatalf("the backend was asked to extend %v, want one minute once", b.extended)
	}
}

// PurgeQueue empties the queue, ready and in-flight messages alike, for
// any key, and answers success with an empty result, as SQS does; a
// message sent afterwards is received.
func TestPurgeQueueEmptiesTheQueue(t *testing.T) {
	hs, b, now := testServer(t)
	b.CreateQueue(t.Context(), "q", QueueOptions{})
	for _, m := range []string{"a", "b"} {
		b.Send(t.Context(), "q", []byte(m), 0)
	}
	if got, _ := b.Receive(t.Context(), "q", 1, time.Minute, 0); len(got) != 1 {
		t.Fatalf("received %d before the purge, want 1", len(got))
	}
	status, body, _ := jsonCall(t, hs, now, "PurgeQueue", `{"QueueUrl":"http://x/000000000000/q"}`)
	if status != 200 || strings.TrimSpace(body) != "{}" {
		t.Fatalf("PurgeQueue: HTTP %d %s, want 200 and an empty result", status, body)
	}
	if st, _ := b.Stats(t.Context(), "q"); st.Ready+st.Leased != 0 {
		t.Fatalf("after the purge the queue holds %+v", st)
	}
	form := url.Values{"Action": {"PurgeQueue"}, "QueueUrl": {"http://h/000000000000/q"}}
	if status, body := queryCall(t, hs, now, testKeyID, testSecret, form); status != 200 || between(body, "RequestId") == "" {
		t.Fatalf("PurgeQueue in the query protocol: HTTP %d %s", status, body)
	}
}
