package sqs

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// sigv4Algorithm is the only signing algorithm accepted: AWS Signature
// Version 4 with HMAC-SHA256.
const sigv4Algorithm = "AWS4-HMAC-SHA256"

// sigv4Service is the service name a credential scope must carry.
const sigv4Service = "sqs"

// amzDateLayout is the layout of X-Amz-Date (basic ISO 8601, UTC).
const amzDateLayout = "20060102T150405Z"

// clockSkewMax is how far a request's date may be from the endpoint's
// clock, either way, as AWS allows: beyond it a captured request can no
// longer be replayed.
const clockSkewMax = 15 * time.Minute

// AccessKey is one credential the endpoint accepts: an access key ID,
// its secret, and the cairn role it acts in.
type AccessKey struct {
	ID     string
	Secret string
	Role   Role
}

// Role is what an access key may do.
type Role uint8

// Roles an access key may hold, mirroring the cluster's client and
// admin roles.
const (
	// RoleClient may do everything but delete queues.
	RoleClient Role = iota
	// RoleAdmin may also delete queues.
	RoleAdmin
)

// String names the role as the configuration spells it.
func (r Role) String() string {
	if r == RoleAdmin {
		return "admin"
	}
	return "client"
}

// ParseRole reads a role by the name String gives it.
func ParseRole(s string) (Role, error) {
	switch s {
	case "client", "":
		return RoleClient, nil
	case "admin":
		return RoleAdmin, nil
	}
	return 0, fmt.Errorf("role %q: want client or admin", s)
}

// authorization is the parsed Authorization header of a signed request.
type authorization struct {
	keyID         string
	date          string // the scope's yyyymmdd
	region        string
	service       string
	signedHeaders []string
	signature     string
}

// parseAuthorization reads "AWS4-HMAC-SHA256 Credential=ID/date/region/
// service/aws4_request, SignedHeaders=a;b, Signature=hex".
func parseAuthorization(h string) (authorization, *apiError) {
	var a authorization
	alg, rest, ok := strings.Cut(h, " ")
	if !ok || alg != sigv4Algorithm {
		return a, errIncompleteSignature("the Authorization header must use " + sigv4Algorithm + " (Signature Version 4)")
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return a, errIncompleteSignature(fmt.Sprintf("Authorization header component %q is not key=value", part))
		}
		fields[k] = v
	}
	for _, k := range []string{"Credential", "SignedHeaders", "Signature"} {
		if fields[k] == "" {
			return a, errIncompleteSignature(fmt.Sprintf("Authorization header requires a '%s' parameter", k))
		}
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return a, errIncompleteSignature("Credential must have the form KeyID/yyyymmdd/region/sqs/aws4_request")
	}
	a.keyID, a.date, a.region, a.service = scope[0], scope[1], scope[2], scope[3]
	a.signedHeaders = strings.Split(fields["SignedHeaders"], ";")
	a.signature = fields["Signature"]
	return a, nil
}

// verifier checks Signature Version 4 on incoming requests.
type verifier struct {
	region string
	keys   map[string]AccessKey
	now    func() time.Time
}

// verify authenticates req, whose body has been read into body, and
// returns the key that signed it. Every refusal carries the code SQS
// gives for it.
func (v *verifier) verify(req *http.Request, body []byte) (AccessKey, *apiError) {
	h := req.Header.Get("Authorization")
	if h == "" {
		if req.URL.Query().Get("X-Amz-Signature") != "" {
			return AccessKey{}, errUnsupportedAuth("presigned URLs are not supported; sign the Authorization header")
		}
		return AccessKey{}, errMissingToken()
	}
	a, aerr := parseAuthorization(h)
	if aerr != nil {
		return AccessKey{}, aerr
	}
	key, ok := v.keys[a.keyID]
	if !ok {
		return AccessKey{}, errInvalidClientTokenID()
	}
	when, aerr := v.checkDate(req, a)
	if aerr != nil {
		return AccessKey{}, aerr
	}
	canonical, aerr := canonicalRequest(req, body, a.signedHeaders)
	if aerr != nil {
		return AccessKey{}, aerr
	}
	want := signature(key.Secret, when, a.date, a.region, a.service, canonical)
	if subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(a.signature))) != 1 {
		return AccessKey{}, errSignatureDoesNotMatch()
	}
	return key, nil
}

// checkDate reads the request's timestamp, requires it to agree with
// the credential scope, the endpoint's region and service, and to be
// within clockSkewMax of now.
func (v *verifier) checkDate(req *http.Request, a authorization) (string, *apiError) {
	stamp := req.Header.Get("X-Amz-Date")
	if stamp == "" {
		return "", errIncompleteSignature("the request must carry an X-Amz-Date header")
	}
	if !slices.Contains(a.signedHeaders, "x-amz-date") || !slices.Contains(a.signedHeaders, "host") {
		return "", errIncompleteSignature("SignedHeaders must include host and x-amz-date")
	}
	t, err := time.Parse(amzDateLayout, stamp)
	if err != nil {
		return "", errIncompleteSignature(fmt.Sprintf("X-Amz-Date %q is not in the form yyyymmddThhmmssZ", stamp))
	}
	switch {
	case !strings.HasPrefix(stamp, a.date):
		return "", errSignatureDoesNotMatchMsg(fmt.Sprintf("the credential scope's date %s is not the date of X-Amz-Date %s", a.date, stamp))
	case a.service != sigv4Service:
		return "", errSignatureDoesNotMatchMsg(fmt.Sprintf("credential should be scoped to the service %q, not %q", sigv4Service, a.service))
	case a.region != v.region:
		return "", errSignatureDoesNotMatchMsg(fmt.Sprintf("credential should be scoped to the endpoint's region %q, not %q", v.region, a.region))
	}
	now := v.now()
	if d := now.Sub(t); d > clockSkewMax || d < -clockSkewMax {
		return "", errRequestExpired(fmt.Sprintf("Signature expired: %s is not within %s of the endpoint's time %s",
			stamp, clockSkewMax, now.UTC().Format(amzDateLayout)))
	}
	return stamp, nil
}

// canonicalRequest builds the canonical form of req that the client
// signed: method, path, query, the signed headers and the payload hash.
func canonicalRequest(req *http.Request, body []byte, signed []string) (string, *apiError) {
	if !slices.IsSorted(signed) {
		return "", errIncompleteSignature("SignedHeaders must be sorted and lower case")
	}
	payload := sha256.Sum256(body)
	payloadHex := hex.EncodeToString(payload[:])
	if claimed := req.Header.Get("X-Amz-Content-Sha256"); claimed != "" && claimed != payloadHex {
		return "", errSignatureDoesNotMatchMsg("X-Amz-Content-Sha256 does not match the body's SHA-256")
	}
	var b strings.Builder
	b.WriteString(req.Method + "\n")
	b.WriteString(canonicalPath(req.URL.EscapedPath()) + "\n")
	b.WriteString(canonicalQuery(req.URL.RawQuery) + "\n")
	for _, name := range signed {
		b.WriteString(name + ":" + headerValue(req, name) + "\n")
	}
	b.WriteString("\n" + strings.Join(signed, ";") + "\n")
	b.WriteString(payloadHex)
	return b.String(), nil
}

// headerValue is a signed header's canonical value: its values joined
// by commas, each trimmed and with inner runs of spaces collapsed. Host
// and Content-Length are not in Go's header map, so they are read from
// the request itself.
func headerValue(req *http.Request, name string) string {
	var values []string
	switch name {
	case "host":
		values = []string{req.Host}
	case "content-length":
		values = []string{fmt.Sprint(req.ContentLength)}
	default:
		values = req.Header.Values(name)
	}
	for i, v := range values {
		values[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(values, ",")
}

// canonicalPath encodes an already escaped path once more, segment by
// segment, as SigV4 requires of every service but S3.
func canonicalPath(escaped string) string {
	if escaped == "" {
		return "/"
	}
	segments := strings.Split(escaped, "/")
	for i, s := range segments {
		segments[i] = uriEncode(s)
	}
	return strings.Join(segments, "/")
}

// canonicalQuery sorts the query's parameters by name, then value, each
// encoded as SigV4 encodes.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	var pairs []string
	for part := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		pairs = append(pairs, uriEncode(unescapeQuery(k))+"="+uriEncode(unescapeQuery(v)))
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// unescapeQuery decodes one query component, leaving a malformed one as
// it is (the signature then fails to match, which is the right answer).
func unescapeQuery(s string) string {
	out, err := url.QueryUnescape(s)
	if err != nil {
		return s
	}
	return out
}

// uriEncode percent-encodes every byte but the unreserved characters
// (A-Z a-z 0-9 - _ . ~), with upper-case hex, as SigV4 specifies.
func uriEncode(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// signature computes the hex signature of a canonical request under
// secret: the signing key derived from the date, region and service,
// applied to the string to sign.
func signature(secret, stamp, date, region, service, canonical string) string {
	hashed := sha256.Sum256([]byte(canonical))
	scope := date + "/" + region + "/" + service + "/aws4_request"
	toSign := sigv4Algorithm + "\n" + stamp + "\n" + scope + "\n" + hex.EncodeToString(hashed[:])
	key := hmacSHA256([]byte("AWS4"+secret), date)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, service)
	key = hmacSHA256(key, "aws4_request")
	return hex.EncodeToString(hmacSHA256(key, toSign))
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
