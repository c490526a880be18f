package discovery

import "testing"

func TestByURL(t *testing.T) {
	c := testCells(t)
	// Cells: 1 https://legacy.example.com, 2 https://Cell-2.example.com:8443/gitlab/,
	// 3 http://10.0.0.3, 4 http://[::1]:8080.
	tests := []struct {
		address string
		want    uint64 // 0 = no cell
	}{
		{"https://legacy.example.com", 1},
		{"https://legacy.example.com/", 1},
		{"https://legacy.example.com:443", 1},
		{"https://legacy.example.com:0443/", 1},
		{"HTTPS://LEGACY.example.COM", 1},
		{"http://legacy.example.com", 0},
		{"https://legacy.example.com:80", 0},
		{"https://legacy.example.com/x", 0},
		{"https://cell-2.example.com:8443/gitlab", 2},
		{"https://cell-2.example.com:8443/gitlab/", 2},
		{"https://cell-2.example.com:8443/GitLab", 0},
		{"https://cell-2.example.com/gitlab", 0},
		{"https://cell-2.example.com:8443", 0},
		{"http://10.0.0.3", 3},
		{"http://10.0.0.3:80/", 3},
		{"http://10.0.0.3:8080", 0},
		{"http://[::1]:8080", 4},
		{"http://[::1]:8080/", 4},
		{"http://[::1]", 0},
		{"http://::1:8080", 0},
		// user info, query, fragment: never a match
		{"https://user@legacy.example.com", 0},
		{"https://legacy.example.com/?x=1", 0},
		{"https://legacy.example.com#f", 0},
		// malformed
		{"", 0},
		{"://legacy.example.com", 0},
		{"https://", 0},
		{"https://legacy.example.com:99999", 0},
		{"https://legacy.example.com:x", 0},
		{"https://[::1", 0},
		// bare authority, as the Topology Service stores addresses: unique host (and port) only
		{"legacy.example.com", 1},
		{"LEGACY.example.com:443", 1},
		{"legacy.example.com:80", 0},
		{"cell-2.example.com:8443", 2},
		{"10.0.0.3", 3},
		{"[::1]:8080", 4},
		{"cell-2.example.com/gitlab", 0},
		{"unknown.example.com", 0},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			cell, ok := c.ByURL(tt.address)
			var got uint64
			if ok {
				got = cell.ID
			}
			if got != tt.want {
				t.Errorf("ByURL(%q): got cell %d, want %d", tt.address, got, tt.want)
			}
		})
	}
}

func TestByURLAmbiguousAuthority(t *testing.T) {
	c, err := NewCells([]Cell{
		{ID: 1, URL: mustURL(t, "http://127.0.0.1:3001"), Legacy: true},
		{ID: 2, URL: mustURL(t, "http://127.0.0.1:3002")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cell, ok := c.ByURL("127.0.0.1"); ok {
		t.Errorf("ByURL(127.0.0.1) with two cells on that host: got cell %d, want none", cell.ID)
	}
	if cell, ok := c.ByURL("127.0.0.1:3002"); !ok || cell.ID != 2 {
		t.Errorf("ByURL(127.0.0.1:3002): got %v %v, want cell 2", cell, ok)
	}
}
