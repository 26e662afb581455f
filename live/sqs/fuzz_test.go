package sqs

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeEnvelope feeds stored payloads to the envelope decoder: it
// must never panic, and whatever it decodes must encode back to the
// same bytes, or be read as a foreign body holding the payload whole.
func FuzzDecodeEnvelope(f *testing.F) {
	s := "v"
	f.Add(envelope{Body: "b", SentMillis: 1, SenderID: "k", Attributes: map[string]messageAttribute{"a": {DataType: "String", StringValue: &s}}}.encode())
	f.Add([]byte("plain body"))
	f.Add(append(envelopeMagic, 0xff, 0xff))
	f.Fuzz(func(t *testing.T, payload []byte) {
		e := decodeEnvelope(payload)
		if e.Body == string(payload) && e.Attributes == nil {
			return
		}
		if again := e.encode(); !bytes.Equal(again, payload) {
			// Decoding is lenient only where encoding is canonical: an
			// envelope that decodes but re-encodes differently would be
			// read two ways.
			if decodeEnvelope(again).Body != e.Body {
				t.Fatalf("envelope %q decodes to %+v, which encodes to %q with another body", payload, e, again)
			}
		}
	})
}

// FuzzOpenHandle feeds receipt handles to the signer: none may panic, and
// none but the minted one may open.
func FuzzOpenHandle(f *testing.F) {
	s := handleSigner{node: 1, start: 5, secret: []byte("fuzz")}
	minted := s.mint(receipt{Node: 1, Start: 5, Queue: "q", Lease: 3, Grant: 4, Message: MessageID{Producer: 1, Seq: 2}})
	f.Add(minted)
	f.Add("")
	f.Add(strings.Repeat("A", 60))
	f.Fuzz(func(t *testing.T, handle string) {
		if _, aerr := s.open(handle, "q"); aerr == nil && handle != minted {
			t.Fatalf("handle %q opened, but only %q was minted", handle, minted)
		}
	})
}

// FuzzRequest sends arbitrary signed query and JSON requests through the
// whole endpoint over the fake backend: every answer must be a well-formed
// success or an SQS error, never a panic or a 500.
func FuzzRequest(f *testing.F) {
	f.Add(true, "SendMessageBatch", `{"QueueUrl":"http://h/000000000000/q","Entries":[{"Id":"a","MessageBody":"x"}]}`)
	f.Add(false, "", "Action=SendMessage&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq&MessageBody=hi&MessageAttribute.1.Name=a&MessageAttribute.1.Value.DataType=Binary&MessageAttribute.1.Value.BinaryValue=AA%3D%3D")
	f.Add(false, "", "Action=ReceiveMessage&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq&MaxNumberOfMessages=x")
	f.Add(true, "DeleteMessage", `{"QueueUrl":"http://h/000000000000/q","ReceiptHandle":"AQ"}`)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	b := newFakeBackend()
	b.CreateQueue(context.Background(), "q", QueueOptions{})
	s, err := New(Config{Node: 1, Region: testRegion, Backend: b, Now: func() time.Time { return now },
		Keys: []AccessKey{{ID: testKeyID, Secret: testSecret}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, isJSON bool, action, body string) {
		req := httptest.NewRequest(http.MethodPost, "http://h/", strings.NewReader(body))
		if isJSON {
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			req.Header.Set("X-Amz-Target", "AmazonSQS."+url.PathEscape(action))
		} else {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		sign(req, []byte(body), testKeyID, testSecret, now)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		answer := w.Body.String()
		isError := strings.Contains(answer, `"message":`) || strings.Contains(answer, "<Message>")
		code := between(answer, "Code")
		if isJSON {
			code, _, _ = strings.Cut(w.Header().Get("X-Amzn-Query-Error"), ";")
		}
		if code == "SignatureDoesNotMatch" || code == "IncompleteSignature" {
			t.Fatalf("a request signed as a client signs it was refused: %s", answer)
		}
		if w.Code >= 500 || w.Code != 200 && !isError {
			t.Fatalf("HTTP %d %s for %q %q", w.Code, answer, action, body)
		}
	})
}
