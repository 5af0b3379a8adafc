package deploy_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The binaries every test uses are built as the Dockerfile builds them: in a
// copy of the build context that .dockerignore allows, by the Dockerfile's
// own go build lines.

var builds struct {
	once sync.Once
	bins map[string]string // output name in the image ("chorus") → path here
	err  error
}

// binary returns the path of a binary built by the Dockerfile's recipe:
// "chorus" or "healthcheck".
func binary(tb testing.TB, name string) string {
	tb.Helper()
	root, dockerfile := moduleRoot(tb), readRepoFile(tb, "Dockerfile")
	builds.once.Do(func() {
		context := filepath.Join(binDir, "context")
		if builds.err = copyBuildContext(root, context); builds.err == nil {
			builds.bins, builds.err = buildAsDockerfile(context, dockerfile, filepath.Join(binDir, "out"))
		}
	})
	if builds.err != nil {
		tb.Fatalf("building as the Dockerfile does: %v", builds.err)
	}
	path, ok := builds.bins[name]
	if !ok {
		tb.Fatalf("the Dockerfile builds no /out/%s", name)
	}
	return path
}

// buildAsDockerfile runs every `RUN ... go build ...` line of the Dockerfile
// in the build context root, word for word, except that -o points into dir.
func buildAsDockerfile(root, dockerfile, dir string) (map[string]string, error) {
	bins := map[string]string{}
	for _, line := range dockerfileRuns(dockerfile) {
		if !strings.Contains(line, "go build") {
			continue
		}
		words, err := shellWords(line)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		var env []string
		for len(words) > 0 && strings.Contains(words[0], "=") {
			env, words = append(env, words[0]), words[1:]
		}
		if len(words) < 2 || words[0] != "go" || words[1] != "build" {
			continue
		}
		args := append([]string(nil), words[1:]...)
		name := ""
		for i := range args {
			if args[i] == "-o" && i+1 < len(args) {
				name = filepath.Base(args[i+1])
				args[i+1] = filepath.Join(dir, name)
			}
		}
		if name == "" {
			return nil, fmt.Errorf("%q: no -o", line)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, out)
		}
		bins[name] = filepath.Join(dir, name)
	}
	if len(bins) == 0 {
		return nil, errors.New("no RUN ... go build line")
	}
	return bins, nil
}

// copyBuildContext copies into dir the files of the repository at root that
// .dockerignore lets into a Docker build context, so that the build sees
// what `COPY . .` would.
func copyBuildContext(root, dir string) error {
	raw, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		return err
	}
	ignore := parseDockerignore(string(raw))
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		excluded := ignore.excludes(rel)
		switch {
		case d.IsDir():
			if excluded && !ignore.mayInclude(rel) {
				return filepath.SkipDir
			}
			return nil
		case excluded || !d.Type().IsRegular():
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// dockerignore is the patterns of a .dockerignore file, in order.
type dockerignore []struct {
	re      *regexp.Regexp
	negated bool
	text    string
}

// parseDockerignore reads patterns as Docker does: one a line, # comments,
// a leading ! re-includes, * and ? within one path element, ** across them.
func parseDockerignore(text string) dockerignore {
	var d dockerignore
	for _, line := range strings.Split(text, "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		negated := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/")
		p = filepath.ToSlash(filepath.Clean(p))
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(p); i++ {
			switch {
			case strings.HasPrefix(p[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				re.WriteString(".*")
				i++
			case p[i] == '*':
				re.WriteString("[^/]*")
			case p[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		}
		re.WriteString("$")
		d = append(d, struct {
			re      *regexp.Regexp
			negated bool
			text    string
		}{regexp.MustCompile(re.String()), negated, p})
	}
	return d
}

// excludes reports whether path (slash-separated, from the context's root)
// stays out: the last pattern matching it or one of its parents decides.
func (d dockerignore) excludes(path string) bool {
	excluded := false
	for _, p := range d {
		for prefix := path; ; {
			if p.re.MatchString(prefix) {
				excluded = !p.negated
				break
			}
			i := strings.LastIndex(prefix, "/")
			if i < 0 {
				break
			}
			prefix = prefix[:i]
		}
	}
	return excluded
}

// mayInclude reports whether an exception could let in something below an
// excluded directory.
func (d dockerignore) mayInclude(dir string) bool {
	for _, p := range d {
		if p.negated && strings.HasPrefix(p.text, dir+"/") {
			return true
		}
	}
	return false
}

// dockerfileRuns returns the commands of the Dockerfile's RUN instructions,
// continuation lines joined.
func dockerfileRuns(dockerfile string) []string {
	var runs []string
	var cur strings.Builder
	inRun := false
	for _, line := range strings.Split(dockerfile, "\n") {
		trimmed := strings.TrimSpace(line)
		if !inRun {
			if !strings.HasPrefix(trimmed, "RUN ") {
				continue
			}
			inRun = true
			trimmed = strings.TrimPrefix(trimmed, "RUN ")
		}
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if rest, more := strings.CutSuffix(trimmed, `\`); more {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(trimmed)
		runs = append(runs, cur.String())
		cur.Reset()
		inRun = false
	}
	return runs
}

// shellWords splits a simple shell command line: words apart by spaces,
// with single and double quotes, and no expansions.
func shellWords(line string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case strings.ContainsRune("$`\\;&|<>", r):
			return nil, fmt.Errorf("shell syntax %q is not supported here", r)
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}
