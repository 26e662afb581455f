package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/live/sqs"
)

// sqsConfigText is goodConfig with the SQS endpoint on: top-level keys
// go before the first table, so sqs_listen is spliced in at the top.
func sqsConfigText(listen, table string) string {
	return listen + "\n" + goodConfig + "\n" + table
}

const sqsKeys = `
[sqs]
region = "eu-west-1"

[[sqs.keys]]
id = "AKIDAPP"
secret_file = "app.secret"

[[sqs.keys]]
id = "AKIDOPS"
secret = "ops-secret-0123456789"
role = "admin"
`

func TestSQSConfig(t *testing.T) {
	path := writeConfig(t, sqsConfigText(`sqs_listen = "127.0.0.1:9324"`, sqsKeys))
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "app.secret"), []byte("app-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fc, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := fc.liveConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := fc.sqsEndpoint(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []sqs.AccessKey{{ID: "AKIDAPP", Secret: "app-secret-0123456789", Role: sqs.RoleClient}, {ID: "AKIDOPS", Secret: "ops-secret-0123456789", Role: sqs.RoleAdmin}}
	if ec.Listen != "127.0.0.1:9324" || ec.Server.Region != "eu-west-1" || len(ec.Server.Keys) != 2 || ec.Server.Keys[0] != want[0] || ec.Server.Keys[1] != want[1] {
		t.Fatalf("endpoint config %+v", ec)
	}
	if string(ec.Client.Secret) != "0123456789abcdef-client" || ec.Admin == nil || string(ec.Admin.Secret) != "0123456789abcdef-admin" {
		t.Fatalf("cluster credentials %+v / %+v", ec.Client, ec.Admin)
	}
}

func TestSQSOffByDefault(t *testing.T) {
	fc, err := loadConfig(writeConfig(t, goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := fc.liveConfig(nil)
	if ec, err := fc.sqsEndpoint(cfg, nil); ec != nil || err != nil {
		t.Fatalf("endpoint %+v, %v without sqs_listen", ec, err)
	}
}

func TestSQSConfigErrors(t *testing.T) {
	cases := []struct {
		listen, table, want string
	}{
		{"", sqsKeys, "[sqs] is set but sqs_listen is empty"},
		{`sqs_listen = "127.0.0.1:9324"`, "", "lists no access key"},
		{`sqs_listen = "localhost"`, sqsKeys, "sqs_listen"},
		{`sqs_listen = "127.0.0.1:9324"`, "[[sqs.keys]]\nid = \"K\"\nsecret = \"short\"\n", "at least 16 bytes"},
		{`sqs_listen = "127.0.0.1:9324"`, "[[sqs.keys]]\nid = \"K\"\n", "exactly one of secret and secret_file"},
		{`sqs_listen = "127.0.0.1:9324"`, "[[sqs.keys]]\nid = \"K\"\nsecret = \"0123456789abcdef\"\nrole = \"root\"\n", "want client or admin"},
		{`sqs_listen = "127.0.0.1:9324"`, "[[sqs.keys]]\nid = \"K/1\"\nsecret = \"0123456789abcdef\"\n", "sqs.keys[0].id"},
		{`sqs_listen = "127.0.0.1:9324"`, "[[sqs.keys]]\nid = \"K\"\nsecret = \"0123456789abcdef\"\n[[sqs.keys]]\nid = \"K\"\nsecret = \"0123456789abcdef\"\n", "appears twice"},
		{`sqs_listen = "127.0.0.1:9324"`, "[sqs]\nclient_cert = \"c.pem\"\nclient_key = \"k.pem\"\n[[sqs.keys]]\nid = \"K\"\nsecret = \"0123456789abcdef\"\n", "for clusters with [tls]"},
		{`sqs_listen = "127.0.0.1:9324"`, "[sqs]\nregion = \"eu west\"\n[[sqs.keys]]\nid = \"K\"\nsecret = \"0123456789abcdef\"\n", "sqs.region"},
	}
	for _, tc := range cases {
		fc, err := loadConfig(writeConfig(t, sqsConfigText(tc.listen, tc.table)))
		if err == nil {
			err = fc.validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s + %q: got %v, want an error mentioning %q", tc.listen, tc.table, err, tc.want)
		}
	}
}

func TestSQSAdminKeyNeedsAdminCredential(t *testing.T) {
	text := strings.Replace(sqsConfigText(`sqs_listen = "127.0.0.1:9324"`, sqsKeys), `admin_secret = "0123456789abcdef-admin"`, "", 1)
	fc, err := loadConfig(writeConfig(t, text))
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.validate(); err == nil || !strings.Contains(err.Error(), "admin role, but the endpoint has no admin credential") {
		t.Fatalf("validate: %v", err)
	}
}

// tlsSQSConfig is a node configuration with [tls] and the SQS endpoint,
// its certificates in dir; sqsCerts are the [sqs] certificate lines.
func tlsSQSConfig(dir, sqsCerts string) string {
	return fmt.Sprintf(`id = 1
data_dir = "data"
sqs_listen = "127.0.0.1:9324"

[tls]
ca = %q
cert = %q
key = %q

[sqs]
%s

[[sqs.keys]]
id = "AKIDOPS"
secret = "ops-secret-0123456789"
role = "admin"

[[peers]]
id = 1
addr = "127.0.0.1:7101"
client_addr = "127.0.0.1:7001"
`, filepath.Join(dir, "ca.pem"), filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem"), sqsCerts)
}

// TestSQSConfigWithTLS: under TLS the endpoint serves HTTPS with the
// node's certificate and connects with the client and admin
// certificates the [sqs] table names; without them it is refused.
func TestSQSConfigWithTLS(t *testing.T) {
	dir := t.TempDir()
	if err := writeDevCerts(dir, 1, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	certs := fmt.Sprintf("client_cert = %q\nclient_key = %q\nadmin_cert = %q\nadmin_key = %q",
		filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem"), filepath.Join(dir, "admin.pem"), filepath.Join(dir, "admin-key.pem"))
	fc, err := loadConfig(writeConfig(t, tlsSQSConfig(dir, certs)))
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := fc.liveConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := fc.sqsEndpoint(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ec.TLS == nil || ec.Client.TLS == nil || len(ec.Client.TLS.Certificates) != 1 || ec.Admin == nil || ec.Admin.TLS == nil || ec.StatusAuth.TLS == nil {
		t.Fatalf("endpoint TLS settings: %+v", ec)
	}
	fc, err = loadConfig(writeConfig(t, tlsSQSConfig(dir, "")))
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.validate(); err == nil || !strings.Contains(err.Error(), "needs client_cert and client_key") {
		t.Fatalf("TLS without the endpoint's certificate: %v", err)
	}
}
