package cellrouter

import (
	"encoding/json"
	"net/url"
	"testing"
)

func TestTopLevelString(t *testing.T) {
	tests := []struct {
		name, body string
		want       string
		ok         bool
	}{
		{"runner verify", `{"token":"glrt-abc","system_id":"s_1","info":{"name":"r"}}`, "glrt-abc", true},
		{"nested token ignored", `{"info":{"token":"inner"},"last_update":"x"}`, "", false},
		{"after nested", `{"info":{"token":"inner","a":[1,{"token":"x"}]},"token":"outer"}`, "outer", true},
		{"last duplicate wins", `{"token":"first","token":"second"}`, "second", true},
		{"escaped key", `{"tok\u0065n":"v"}`, "v", true},
		{"escaped value", `{"token":"a\/b\u00e9\n"}`, "a/bé\n", true},
		{"surrogate pair", `{"token":"\ud83d\ude00"}`, "😀", true},
		{"not a string", `{"token":123}`, "", false},
		{"null", `{"token":null}`, "", false},
		{"truncated", `{"token":"abc","info":{"x":`, "", false},
		{"trailing garbage", `{"token":"abc"} x`, "", false},
		{"array", `["token"]`, "", false},
		{"empty", ``, "", false},
		{"whitespace", " \n{ \"token\" : \"v\" } \n", "v", true},
		{"bad escape", `{"token":"\x"}`, "", false},
		{"bad number", `{"a":01,"token":"v"}`, "", false},
		{"numbers", `{"a":-0.5e+3,"b":[true,false,null],"token":"v"}`, "v", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := topLevelString([]byte(tt.body), "token")
			if got != tt.want || ok != tt.ok {
				t.Errorf("topLevelString(%q): got %q, %v; want %q, %v", tt.body, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestTopLevelUintStopsAtFirstAndToleratesTruncation(t *testing.T) {
	got, ok := topLevelUint([]byte(`{"id":4242,"token":"x","variables":[{"key":"A","val`), "id")
	if !ok || got != 4242 {
		t.Errorf("got %d, %v; want 4242, true", got, ok)
	}
	if _, ok := topLevelUint([]byte(`{"info":{"id":1}}`), "id"); ok {
		t.Errorf("nested id must not count")
	}
}

// FuzzBodyToken holds the body token extraction to what the cell will see: whenever
// encoding/json accepts a body, edge finds exactly the token it finds (or none), and
// edge never claims a token in a body encoding/json rejects.
func FuzzBodyToken(f *testing.F) {
	for _, seed := range []string{
		`{"token":"glrt-t2_AAECAwQFBgcICQoLDA0OD2M6MgpnOnlhCm86MQp1OjE2EQ.01.1a0uul4cy","last_update":"1"}`,
		`{"info":{"token":"x"},"token":"y"}`, `{"token":"\u00e9"}`, `{"token":1}`, `token=abc&x=1`,
		`{"token":"a","token":"b"}`, `[1,2]`, `{"a":{"b":[{"c":"d"}]}}`, `{"token":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := topLevelString(body, "token")
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(body, &doc); err != nil {
			if ok {
				t.Fatalf("edge found a token in a body encoding/json cannot read as an object: %q", body)
			}
			return
		}
		raw, present := doc["token"]
		var want string
		wantOK := present && len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &want) == nil
		if ok != wantOK || got != want {
			t.Fatalf("body %q: edge found %q (%v), encoding/json %q (%v)", body, got, ok, want, wantOK)
		}
		// The form parser must never panic either.
		bodyToken(bodyForm, body)
		_, _ = url.ParseQuery(string(body))
	})
}
