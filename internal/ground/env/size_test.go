package env

import "testing"

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1048576": 1 << 20, "64MiB": 64 << 20, "64 mib": 64 << 20, "1GB": 1e9, "1.5GiB": 3 << 29,
		"2k": 2048, "10KB": 10000, "7B": 7, " 3 TiB ": 3 << 40,
	}
	for s, want := range good {
		if n, err := ParseSize(s); err != nil || n != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"", "-1", "MiB", "64XB", "1e3", "lots", "9999999TiB", "1.2.3MB"} {
		if n, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, n)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1MiB", 64 << 10: "64KiB", 100: "100B", 0: "0B", 3 << 40: "3TiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
