package tunnel

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
)

const msgDrain = "drain"

type controlMessage struct {
	Type string `json:"type"`
}

// control is one end of the control stream (see the package doc): JSON lines both ways.
type control struct {
	mu     sync.Mutex // serializes writes
	stream io.ReadWriteCloser
}

func (c *control) send(typ string) error {
	b, err := json.Marshal(controlMessage{Type: typ})
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err = c.stream.Write(append(b, '\n'))
	return err
}

// receive calls on for each message until the stream ends; lines it cannot parse are skipped,
// so a newer peer can add messages.
func (c *control) receive(on func(typ string)) error {
	sc := bufio.NewScanner(c.stream)
	sc.Buffer(make([]byte, 0, 256), maxControlLine)
	for sc.Scan() {
		var m controlMessage
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type != "" {
			on(m.Type)
		}
	}
	return sc.Err()
}
