package social

import (
	_ "embed"
	"strings"
	"sync"
)

// commonPasswordsText is the list of the 100,000 most common passwords of at
// least 8 bytes, lower-case, one a line; common_passwords.NOTICE says where
// it comes from, how it was made, and its licence.
//
//go:embed common_passwords.txt
var commonPasswordsText string

// commonPasswords is the list as a set, built on first use (about 4 MB) so
// that a process that never sets a password never pays for it.
var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	set := make(map[string]struct{}, strings.Count(commonPasswordsText, "\n")+1)
	for line := range strings.Lines(commonPasswordsText) {
		if p := strings.TrimRight(line, "\r\n"); p != "" {
			set[p] = struct{}{}
		}
	}
	return set
})

// commonPassword reports whether password is one of the common or breached
// passwords that NIST SP 800-63B (5.1.1.2) says a verifier must refuse,
// ignoring case: "PassWord1" is as easily guessed as "password1".
func commonPassword(password string) bool {
	_, found := commonPasswords()[strings.ToLower(password)]
	return found
}
