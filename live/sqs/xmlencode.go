package sqs

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// xmlNamespace is the namespace of every query protocol response.
const xmlNamespace = "http://queue.amazonaws.com/doc/2012-11-05/"

// encodeXML renders an action's output as the query protocol answers:
// <ActionResponse><ActionResult>fields</ActionResult><ResponseMetadata>
// <RequestId>. Lists and maps are flattened into repeated elements named
// by each field's `xml` tag, as SQS does.
func encodeXML(action, requestID string, out any) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString("<" + action + `Response xmlns="` + xmlNamespace + `">`)
	v := reflect.ValueOf(out)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.NumField() > 0 {
		b.WriteString("<" + action + "Result>")
		writeXMLStruct(&b, v)
		b.WriteString("</" + action + "Result>")
	}
	b.WriteString("<ResponseMetadata><RequestId>")
	xml.EscapeText(&b, []byte(requestID))
	b.WriteString("</RequestId></ResponseMetadata></" + action + "Response>")
	return b.Bytes()
}

func writeXMLStruct(b *bytes.Buffer, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("xml")
		if name == "" {
			name = f.Name
		}
		writeXMLField(b, name, v.Field(i))
	}
}

// writeXMLField writes one field; empty strings, lists and maps are left
// out, as SQS leaves them out.
func writeXMLField(b *bytes.Buffer, name string, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.String() != "" {
			element(b, name, v.String())
		}
	case reflect.Bool:
		element(b, name, strconv.FormatBool(v.Bool()))
	case reflect.Slice:
		for j := range v.Len() {
			e := v.Index(j)
			if e.Kind() == reflect.String {
				element(b, name, e.String())
				continue
			}
			b.WriteString("<" + name + ">")
			writeXMLStruct(b, e)
			b.WriteString("</" + name + ">")
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		for _, k := range keys {
			b.WriteString("<" + name + ">")
			element(b, "Name", k.String())
			writeXMLMapValue(b, v.MapIndex(k))
			b.WriteString("</" + name + ">")
		}
	}
}

// writeXMLMapValue writes a map entry's <Value>: a string, or a message
// attribute's value and data type.
func writeXMLMapValue(b *bytes.Buffer, v reflect.Value) {
	if v.Kind() == reflect.String {
		element(b, "Value", v.String())
		return
	}
	a := v.Interface().(messageAttribute)
	b.WriteString("<Value>")
	if a.isBinary() {
		element(b, "BinaryValue", base64.StdEncoding.EncodeToString(a.BinaryValue))
	} else {
		element(b, "StringValue", deref(a.StringValue))
	}
	element(b, "DataType", a.DataType)
	b.WriteString("</Value>")
}

func element(b *bytes.Buffer, name, text string) {
	b.WriteString("<" + name + ">")
	xml.EscapeText(b, []byte(text))
	b.WriteString("</" + name + ">")
}
