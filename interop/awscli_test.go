package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// awsCLI finds the AWS CLI: Debian's package first (its 2.9 speaks the
// query protocol to SQS, which newer SDKs no longer do), then any on
// PATH.
func awsCLI() string {
	if _, err := os.Stat("/usr/bin/aws"); err == nil {
		return "/usr/bin/aws"
	}
	if p, err := exec.LookPath("aws"); err == nil {
		return p
	}
	return ""
}

// cli runs one aws sqs command against node 0's endpoint with keyID and
// decodes its JSON output into out (when out is not nil).
type cli struct {
	t        *testing.T
	bin      string
	endpoint string
	home     string
}

func (c cli) run(keyID, secret string, out any, args ...string) {
	c.t.Helper()
	full := append([]string{"--endpoint-url", "http://" + c.endpoint, "--output", "json", "sqs"}, args...)
	cmd := exec.Command(c.bin, full...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + c.home,
		"AWS_ACCESS_KEY_ID=" + keyID, "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_DEFAULT_REGION=" + Region,
		"AWS_CONFIG_FILE=" + filepath.Join(c.home, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(c.home, "credentials"),
		"AWS_PAGER=", "AWS_EC2_METADATA_DISABLED=true",
	}
	b, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		c.t.Fatalf("aws sqs %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("aws sqs %s: output %q: %v", strings.Join(args, " "), b, err)
		}
	}
}

// TestAWSCLI drives the AWS CLI through create, send, receive, delete
// and attributes, so the endpoint is tested by a second client nobody
// here wrote (Debian's awscli 2.9 uses the query protocol).
func TestAWSCLI(t *testing.T) {
	bin := awsCLI()
	if bin == "" {
		t.Skip("awscli is not installed (apt-get install awscli; .ci/run does when run as root): the AWS CLI test is skipped")
	}
	c, _ := startCluster(t)
	aws := cli{t: t, bin: bin, endpoint: c.Endpoints[0], home: t.TempDir()}
	var created struct{ QueueUrl string }
	aws.run(AppKeyID, AppSecret, &created, "create-queue", "--queue-name", "cli-jobs")
	if !strings.HasSuffix(created.QueueUrl, "/000000000000/cli-jobs") {
		t.Fatalf("create-queue: %+v", created)
	}
	var sent struct{ MessageId, MD5OfMessageBody, MD5OfMessageAttributes string }
	aws.run(AppKeyID, AppSecret, &sent, "send-message", "--queue-url", created.QueueUrl, "--message-body", "from the cli & friends",
		"--message-attributes", `{"kind":{"DataType":"String","StringValue":"greeting"}}`)
	if sent.MessageId == "" || sent.MD5OfMessageAttributes == "" {
		t.Fatalf("send-message: %+v", sent)
	}
	var attrs struct{ Attributes map[string]string }
	aws.run(AppKeyID, AppSecret, &attrs, "get-queue-attributes", "--queue-url", created.QueueUrl, "--attribute-names", "All")
	if attrs.Attributes["ApproximateNumberOfMessages"] != "1" || attrs.Attributes["VisibilityTimeout"] != "30" {
		t.Fatalf("get-queue-attributes: %+v", attrs)
	}
	var got struct {
		Messages []struct {
			MessageId, ReceiptHandle, Body string
			Attributes                     map[string]string
			MessageAttributes              map[string]struct{ StringValue, DataType string }
		}
	}
	aws.run(AppKeyID, AppSecret, &got, "receive-message", "--queue-url", created.QueueUrl, "--wait-time-seconds", "5",
		"--attribute-names", "All", "--message-attribute-names", "All")
	if len(got.Messages) != 1 {
		t.Fatalf("receive-message: %+v", got)
	}
	m := got.Messages[0]
	if m.Body != "from the cli & friends" || m.MessageId != sent.MessageId || m.MessageAttributes["kind"].StringValue != "greeting" ||
		m.Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("received %+v", m)
	}
	aws.run(AppKeyID, AppSecret, nil, "delete-message", "--queue-url", created.QueueUrl, "--receipt-handle", m.ReceiptHandle)
	var listed struct{ QueueUrls []string }
	aws.run(AppKeyID, AppSecret, &listed, "list-queues", "--queue-name-prefix", "cli-")
	if len(listed.QueueUrls) != 1 || listed.QueueUrls[0] != created.QueueUrl {
		t.Fatalf("list-queues: %+v", listed)
	}
	aws.run(OpsKeyID, OpsSecret, nil, "delete-queue", "--queue-url", created.QueueUrl)
}
