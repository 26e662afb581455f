package sqs

// The inputs and outputs of the actions. Field names are SQS's: the JSON
// protocol decodes and encodes them as they are, and the query protocol
// maps them through the `query` tags (decodeForm) and `xml` tags
// (encodeXML). Optional numbers are pointers, so an absent one is told
// from a zero.

type createQueueInput struct {
	QueueName  string
	Attributes map[string]string `query:"Attribute,Name,Value"`
	Tags       map[string]string `json:"tags" query:"Tag,Key,Value"`
}

type getQueueURLInput struct {
	QueueName              string
	QueueOwnerAWSAccountId string
}

type queueURLOutput struct {
	QueueUrl string
}

type listQueuesInput struct {
	QueueNamePrefix string
	NextToken       string
	MaxResults      *int
}

type listQueuesOutput struct {
	QueueUrls []string `json:",omitempty" xml:"QueueUrl"`
	NextToken string   `json:",omitempty"`
}

type queueInput struct {
	QueueUrl string
}

type getAttributesInput struct {
	QueueUrl       string
	AttributeNames []string `query:"AttributeName"`
}

type attributesOutput struct {
	Attributes map[string]string `json:",omitempty" xml:"Attribute"`
}

type setAttributesInput struct {
	QueueUrl   string
	Attributes map[string]string `query:"Attribute,Name,Value"`
}

type sendInput struct {
	QueueUrl                string
	MessageBody             string
	DelaySeconds            *int
	MessageAttributes       map[string]messageAttribute `query:"MessageAttribute"`
	MessageSystemAttributes map[string]messageAttribute `query:"MessageSystemAttribute"`
	MessageDeduplicationId  string
	MessageGroupId          string
}

type sendOutput struct {
	MessageId              string
	MD5OfMessageBody       string
	MD5OfMessageAttributes string `json:",omitempty"`
}

type sendBatchInput struct {
	QueueUrl string
	Entries  []sendEntry `query:"SendMessageBatchRequestEntry"`
}

type sendEntry struct {
	Id                      string
	MessageBody             string
	DelaySeconds            *int
	MessageAttributes       map[string]messageAttribute `query:"MessageAttribute"`
	MessageSystemAttributes map[string]messageAttribute `query:"MessageSystemAttribute"`
	MessageDeduplicationId  string
	MessageGroupId          string
}

type sendBatchOutput struct {
	Successful []sendResultEntry `xml:"SendMessageBatchResultEntry"`
	Failed     []batchError      `xml:"BatchResultErrorEntry"`
}

type sendResultEntry struct {
	Id                     string
	MessageId              string
	MD5OfMessageBody       string
	MD5OfMessageAttributes string `json:",omitempty"`
}

// batchError is one failed entry of a batch.
type batchError struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string
}

type receiveInput struct {
	QueueUrl                    string
	AttributeNames              []string `query:"AttributeName"`
	MessageSystemAttributeNames []string `query:"MessageSystemAttributeName"`
	MessageAttributeNames       []string `query:"MessageAttributeName"`
	MaxNumberOfMessages         *int
	VisibilityTimeout           *int
	WaitTimeSeconds             *int
	ReceiveRequestAttemptId     string
}

type receiveOutput struct {
	Messages []message `json:",omitempty" xml:"Message"`
}

// message is one received message.
type message struct {
	MessageId              string
	ReceiptHandle          string
	MD5OfBody              string
	Body                   string
	Attributes             map[string]string           `json:",omitempty" xml:"Attribute"`
	MD5OfMessageAttributes string                      `json:",omitempty"`
	MessageAttributes      map[string]messageAttribute `json:",omitempty" xml:"MessageAttribute"`
}

type deleteInput struct {
	QueueUrl      string
	ReceiptHandle string
}

type deleteBatchInput struct {
	QueueUrl string
	Entries  []deleteEntry `query:"DeleteMessageBatchRequestEntry"`
}

type deleteEntry struct {
	Id            string
	ReceiptHandle string
}

type deleteBatchOutput struct {
	Successful []idEntry    `xml:"DeleteMessageBatchResultEntry"`
	Failed     []batchError `xml:"BatchResultErrorEntry"`
}

type idEntry struct {
	Id string
}

// emptyOutput is the answer of actions that return nothing.
type emptyOutput struct{}
