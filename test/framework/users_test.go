package framework

import (
	"encoding/csv"
	"os"
	"testing"
)

func TestWriteTokenFile(t *testing.T) {
	path, tokens, err := writeTokenFile(t.TempDir(), []User{{Name: "alice", Groups: []string{"team-a", "devs"}}, {Name: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{tokens["alice"], "alice", "uid-alice", "team-a,devs"}, {tokens["bob"], "bob", "uid-bob"}}
	if len(records) != 2 || len(tokens["alice"]) != 48 || tokens["alice"] == tokens["bob"] {
		t.Fatalf("records %q, tokens %v", records, tokens)
	}
	for i := range want {
		if len(records[i]) != len(want[i]) {
			t.Fatalf("record %d is %q, want %q", i, records[i], want[i])
		}
		for j := range want[i] {
			if records[i][j] != want[i][j] {
				t.Errorf("record %d is %q, want %q", i, records[i], want[i])
			}
		}
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	if _, _, err := writeTokenFile(t.TempDir(), []User{{Name: "a"}, {Name: "a"}}); err == nil {
		t.Error("a user given twice was accepted")
	}
}
