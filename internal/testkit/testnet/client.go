package testnet

import (
	"net/http"
	"net/http/cookiejar"
)

// Client is an HTTP client with a cookie jar of its own, reaching *.localhost hosts on 127.0.0.1,
// that follows redirects like http.DefaultClient.
func Client() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		panic(err) // cookiejar.New never fails without options
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = LoopbackDialer()
	return &http.Client{Transport: tr, Jar: jar}
}
