package deploy_test

import (
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of docker-compose.yml the tests read.
type composeFile struct {
	Services map[string]struct {
		Image       string
		Build       any
		Environment map[string]string
		Volumes     []string
		Ports       []string
	}
}

// prometheusConfig is the part of deploy/prometheus.yml the tests read.
type prometheusConfig struct {
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "docker-compose.yml")), &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// chorusServices are the compose services that run Chorus: those whose
// environment sets CHORUS_ADDR.
func (c composeFile) chorusServices() []string {
	var names []string
	for name, s := range c.Services {
		if s.Environment["CHORUS_ADDR"] != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// TestComposeImages checks that both Chorus instances run one image, built
// once from the Dockerfile, and that every other image is pinned to an
// exact version.
func TestComposeImages(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	instances := c.chorusServices()
	if len(instances) < 2 {
		t.Fatalf("docker-compose.yml runs Chorus as %v, want two instances", instances)
	}
	image := c.Services[instances[0]].Image
	var builders []string
	for _, name := range instances {
		s := c.Services[name]
		if s.Image != image || image == "" {
			t.Errorf("%s runs image %q, %s runs %q: want one image for every instance", name, s.Image, instances[0], image)
		}
		if s.Build != nil {
			builders = append(builders, name)
		}
	}
	if len(builders) != 1 {
		t.Errorf("services that build the Chorus image: %v, want exactly one", builders)
	} else if build := c.Services[builders[0]].Build; build != "." {
		t.Errorf("%s builds %v, want . (the Dockerfile at the root)", builders[0], build)
	}
	exact := regexp.MustCompile(`^[a-z0-9./-]+:v?\d+\.\d+\.\d+(-[a-z0-9.]+)?$`)
	for name, s := range c.Services {
		if slices.Contains(instances, name) {
			continue
		}
		if !exact.MatchString(s.Image) {
			t.Errorf("service %s: image %q is not pinned to an exact version (name:1.2.3[-variant])", name, s.Image)
		}
	}
}

// TestComposePrometheus checks that the compose site's Prometheus loads
// deploy/prometheus.yml, which scrapes /metrics of every Chorus instance
// on the port it listens on, and answers only on this machine.
func TestComposePrometheus(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	prom, ok := c.Services["prometheus"]
	if !ok {
		t.Fatal("docker-compose.yml has no prometheus service")
	}
	if !slices.Contains(prom.Volumes, "./deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro") {
		t.Errorf("prometheus mounts %v, not ./deploy/prometheus.yml as its configuration", prom.Volumes)
	}
	if !slices.Contains(prom.Ports, "127.0.0.1:9090:9090") {
		t.Errorf("prometheus publishes %v, want 127.0.0.1:9090:9090 (this machine only)", prom.Ports)
	}

	var cfg prometheusConfig
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "deploy/prometheus.yml")), &cfg); err != nil {
		t.Fatalf("deploy/prometheus.yml: %v", err)
	}
	var want, got []string
	for _, name := range c.chorusServices() {
		_, port, err := net.SplitHostPort(c.Services[name].Environment["CHORUS_ADDR"])
		if err != nil {
			t.Fatalf("%s: CHORUS_ADDR: %v", name, err)
		}
		want = append(want, net.JoinHostPort(name, port))
	}
	for _, sc := range cfg.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("job %s scrapes %s, want /metrics", sc.JobName, sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			got = append(got, st.Targets...)
		}
	}
	slices.Sort(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("deploy/prometheus.yml scrapes %v, want every Chorus instance: %v", got, want)
	}
}
