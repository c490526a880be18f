package aggregate

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A watch client that stops reading is cut after the event write bound: the watch ends and its
// members' watches are closed, instead of events queueing behind a reader that never reads.
func TestWatchClientThatStopsReadingIsCut(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.EventWriteBound = 200 * time.Millisecond }, "c1")
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	conn.Write([]byte("GET /k8s/api/v1/pods?watch=1 HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer alice-token\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %v %v", resp, err)
	}
	// The client reads nothing more while the member's events keep coming.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; f.proxy.watches.Open()["c1"] > 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the watch still open 20 s after its client stopped reading (%d events sent)", i)
		}
		for j := range 200 {
			f.members["c1"].add("ns", "pod-"+strconv.Itoa(i)+"-"+strconv.Itoa(j)+strings.Repeat("x", 200))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
