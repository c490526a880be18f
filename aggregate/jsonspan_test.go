package aggregate

import (
	"encoding/json"
	"reflect"
	"testing"
)

// stampFast must mean exactly what the decoding stamp means.
func TestStampFastMatchesStamp(t *testing.T) {
	inputs := []string{
		`{"kind":"Pod","metadata":{"name":"a","resourceVersion":"12","annotations":{"x":"y"}},"spec":{"s":"}{\"]["}}`,
		`{"metadata":{"name":"a","resourceVersion":"12"}}`,
		`{"metadata":{"resourceVersion":"12","annotations":{}},"status":{}}`,
		`{"metadata":{}}`,
		`{ "metadata" : { "name" : "a" , "annotations" : { "k" : "v\"}" } , "resourceVersion" : "7" } }`,
		`{"metadata":{"name":"a","annotations":{"edge.k8s.io/cluster":"old"},"resourceVersion":"3"}}`,
		`{"spec":{"metadata":{"resourceVersion":"1"}},"metadata":{"resourceVersion":"5","labels":{"a":"b"}}}`,
		`{"nometadata":true}`,
	}
	for _, in := range inputs {
		var want, got any
		json.Unmarshal(stamp([]byte(in), "c1"), &want)
		fast := stampFast([]byte(in), "c1")
		if err := json.Unmarshal(fast, &got); err != nil {
			t.Errorf("%s: stampFast made invalid JSON %s: %v", in, fast, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n fast %s\n want %s", in, fast, stamp([]byte(in), "c1"))
		}
	}
}

// FuzzStampFast: on any JSON object, stampFast gives valid JSON that means what stamp gives.
func FuzzStampFast(f *testing.F) {
	f.Add(`{"metadata":{"name":"a","resourceVersion":"12","annotations":{"x":"y"}}}`)
	f.Add(`{"metadata":{}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var v map[string]any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		var want, got any
		json.Unmarshal(stamp([]byte(in), "c1"), &want)
		if err := json.Unmarshal(stampFast([]byte(in), "c1"), &got); err != nil {
			t.Fatalf("invalid JSON for %q", in)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: fast and decoding stamps differ", in)
		}
	})
}
