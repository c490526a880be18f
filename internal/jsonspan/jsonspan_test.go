package jsonspan

import (
	"encoding/json"
	"testing"
)

// last returns the last top-level member named key of a whole, well-formed object.
func last(b []byte, key string) (raw string, found bool) {
	end, ok := Object(b, 0, 64, func(k []byte, s, e int) bool {
		if KeyEquals(k, key) {
			raw, found = string(b[s:e]), true
		}
		return false
	})
	if !ok || Space(b, end) != len(b) {
		return "", false
	}
	return raw, found
}

func TestObjectMembers(t *testing.T) {
	tests := []struct {
		name, body string
		want       string // the raw value of "token"
		ok         bool
	}{
		{"runner verify", `{"token":"glrt-abc","system_id":"s_1","info":{"name":"r"}}`, `"glrt-abc"`, true},
		{"nested token ignored", `{"info":{"token":"inner"},"last_update":"x"}`, "", false},
		{"after nested", `{"info":{"token":"inner","a":[1,{"token":"x"}]},"token":"outer"}`, `"outer"`, true},
		{"last duplicate", `{"token":"first","token":"second"}`, `"second"`, true},
		{"escaped key", `{"tok\u0065n":"v"}`, `"v"`, true},
		{"number", `{"token":123}`, `123`, true},
		{"null", `{"token":null}`, `null`, true},
		{"truncated", `{"token":"abc","info":{"x":`, "", false},
		{"trailing garbage", `{"token":"abc"} x`, "", false},
		{"array", `["token"]`, "", false},
		{"empty", ``, "", false},
		{"empty object", `{}`, "", false},
		{"whitespace", " \n{ \"token\" : \"v\" } \n", `"v"`, true},
		{"bad escape", `{"token":"\x"}`, "", false},
		{"bad number", `{"a":01,"token":"v"}`, "", false},
		{"numbers", `{"a":-0.5e+3,"b":[true,false,null],"token":"v"}`, `"v"`, true},
		{"brackets in strings", `{"s":{"s":"}{\"]["},"token":"v"}`, `"v"`, true},
		{"escaped quote", `{"k":"v\"}","token":"w"}`, `"w"`, true},
		{"control character", "{\"token\":\"a\x01\"}", "", false},
		{"too deep", `{"a":` + nest(65) + `,"token":"v"}`, "", false},
		{"deep enough", `{"a":` + nest(63) + `,"token":"v"}`, `"v"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := last([]byte(tt.body), "token")
			if got != tt.want || ok != tt.ok {
				t.Errorf("%q: got %s, %v; want %s, %v", tt.body, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func nest(n int) string {
	s := "1"
	for range n {
		s = "[" + s + "]"
	}
	return s
}

func TestObjectStopsAtFirstAndToleratesTruncation(t *testing.T) {
	b := []byte(`{"id":4242,"token":"x","variables":[{"key":"A","val`)
	var got string
	if _, ok := Object(b, 0, 64, func(k []byte, s, e int) bool {
		got = string(b[s:e])
		return KeyEquals(k, "id")
	}); !ok || got != "4242" {
		t.Errorf("got %q, %v; want 4242, true", got, ok)
	}
}

func TestField(t *testing.T) {
	b := []byte(`{ "metadata" : { "name" : "a" , "annotations" : { "k" : "v\"}" } } , "spec":{"metadata":1}}`)
	s, e, found, ok := Field(b, 0, MaxDepth, "metadata")
	if !ok || !found || string(b[s:e]) != `{ "name" : "a" , "annotations" : { "k" : "v\"}" } }` {
		t.Errorf("metadata: %q %v %v", b[s:e], found, ok)
	}
	if _, _, found, ok := Field(b, 0, MaxDepth, "status"); !ok || found {
		t.Errorf("status: found %v, ok %v; want false, true", found, ok)
	}
	if _, _, _, ok := Field([]byte(`[1]`), 0, MaxDepth, "a"); ok {
		t.Errorf("an array is no object")
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{
		`"plain"`:        "plain",
		`"a\/b\u00e9\n"`: "a/bé\n",
		`"\ud83d\ude00"`: "😀",
		`"\ud800"`:       "\ufffd",
		"\"\xff\"":       "\ufffd",
		`"\b\f\r\t\"\\"`: "\b\f\r\t\"\\",
	} {
		if got, ok := Unquote([]byte(in)); !ok || got != want {
			t.Errorf("Unquote(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{`"\x"`, `"abc`, `abc"`, `"\u12"`, "\"\x01\""} {
		if got, ok := Unquote([]byte(in)); ok {
			t.Errorf("Unquote(%s) = %q; want refused", in, got)
		}
	}
}

// FuzzEnd holds the scanner to encoding/json: a text is one well-formed value exactly when
// json.Valid says so, and a string value unquotes to what encoding/json decodes.
func FuzzEnd(f *testing.F) {
	for _, seed := range []string{
		`{"token":"a","token":"b"}`, `[1,2]`, `{"a":{"b":[{"c":"d"}]}}`, `"\ud800"`, `-0.5e+3`, `01`,
		`{"s":"}{\"]["}`, ` true `, `nul`, `"\u00e9"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i := Space(b, 0)
		end, ok := End(b, i, MaxDepth)
		whole := ok && Space(b, end) == len(b)
		if whole != json.Valid(b) {
			t.Fatalf("%q: scanner says %v, encoding/json %v", b, whole, json.Valid(b))
		}
		if whole && b[i] == '"' {
			var want string
			json.Unmarshal(b, &want)
			if got, ok := Unquote(b[i:end]); !ok || got != want {
				t.Fatalf("%q: Unquote %q (%v), encoding/json %q", b, got, ok, want)
			}
		}
	})
}
