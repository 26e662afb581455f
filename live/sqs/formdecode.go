package sqs

import (
	"encoding/base64"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// The query protocol flattens an action's input into form parameters:
// lists as Name.1, Name.2, ...; maps as Name.N.Name and Name.N.Value (or
// Key and Value); nested structures by dotted prefixes. decodeForm fills
// the same input structures the JSON protocol decodes into, guided by a
// `query` tag on each field:
//
//	query:"QueueUrl"                 a scalar under that name
//	query:"AttributeName"            a list of strings AttributeName.N
//	query:"Attribute,Name,Value"     a map from Attribute.N.Name to .Value
//	query:"MessageAttribute"         a map of message attributes
//	query:"SendMessageBatchRequestEntry"  a list of structures
//
// Fields without the tag use their own name.

// listLimit bounds how many members of one list the decoder looks for,
// well above any list SQS accepts.
const listLimit = 100

// decodeForm fills the struct *v points to from form.
func decodeForm(form url.Values, v any) *apiError {
	return decodeStruct(form, "", reflect.ValueOf(v).Elem())
}

func decodeStruct(form url.Values, prefix string, v reflect.Value) *apiError {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("query")
		if tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		parts := strings.Split(tag, ",")
		if err := decodeField(form, prefix+parts[0], parts[1:], v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

// decodeField fills one field from the parameters under name.
func decodeField(form url.Values, name string, keys []string, v reflect.Value) *apiError {
	switch v.Kind() {
	case reflect.String:
		v.SetString(form.Get(name))
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.String {
			if s, ok := form[name]; ok {
				v.Set(reflect.ValueOf(&s[0]))
			}
			return nil
		}
		return decodeInt(form, name, v)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return decodeBytes(form, name, v)
		}
		return decodeList(form, name, v)
	case reflect.Map:
		return decodeMap(form, name, keys, v)
	}
	return nil
}

func decodeInt(form url.Values, name string, v reflect.Value) *apiError {
	s, ok := form[name]
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(s[0])
	if err != nil {
		return errInvalidParameter("Value %s for parameter %s is invalid. Reason: must be an integer.", s[0], name)
	}
	v.Set(reflect.ValueOf(&n))
	return nil
}

func decodeBytes(form url.Values, name string, v reflect.Value) *apiError {
	s := form.Get(name)
	if s == "" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return errInvalidParameter("Value for parameter %s is invalid. Reason: not base64.", name)
	}
	v.SetBytes(b)
	return nil
}

// decodeList reads name.1, name.2, ... until one is missing.
func decodeList(form url.Values, name string, v reflect.Value) *apiError {
	elem := v.Type().Elem()
	for n := 1; n <= listLimit; n++ {
		member := name + "." + strconv.Itoa(n)
		if elem.Kind() == reflect.String {
			s, ok := form[member]
			if !ok {
				return nil
			}
			v.Set(reflect.Append(v, reflect.ValueOf(s[0])))
			continue
		}
		if !hasPrefix(form, member+".") {
			return nil
		}
		e := reflect.New(elem).Elem()
		if err := decodeStruct(form, member+".", e); err != nil {
			return err
		}
		v.Set(reflect.Append(v, e))
	}
	return nil
}

// decodeMap reads name.N.<key> and name.N.<value> pairs; a map of
// structures reads each value's fields under name.N.Value.
func decodeMap(form url.Values, name string, keys []string, v reflect.Value) *apiError {
	keyName, valueName := "Name", "Value"
	if len(keys) == 2 {
		keyName, valueName = keys[0], keys[1]
	}
	for n := 1; n <= listLimit; n++ {
		member := name + "." + strconv.Itoa(n) + "."
		k, ok := form[member+keyName]
		if !ok {
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		e := reflect.New(v.Type().Elem()).Elem()
		if e.Kind() == reflect.String {
			e.SetString(form.Get(member + valueName))
		} else if err := decodeStruct(form, member+valueName+".", e); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(k[0]), e)
	}
	return nil
}

func hasPrefix(form url.Values, prefix string) bool {
	for k := range form {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
