package doctest_test

import (
	"testing"

	"github.com/fxelection/fxelection/internal/doctest"
)

// readmeBlocks are the README's Go, JSON and YAML blocks, by the name of
// their marks: each shows all of a program (or document) that a test runs,
// or an excerpt of one, with a link to it.
var readmeBlocks = map[string]doctest.Block{
	"quickstart":     {Src: "examples/quickstart/main.go"},
	"withfx":         {Src: "examples/withfx/main.go"},
	"api":            {Src: "examples/api/main.go", Excerpt: true},
	"elections.json": {Src: "examples/configs/elections.json"},
	"configfile":     {Src: "examples/configfile/main.go"},
	"module":         {Src: "examples/thirdparty/sharedmem/sharedmem.go", Excerpt: true},
	"redis-fx":       {Src: "examples/redis/main.go", Excerpt: true},
	"postgres-fx":    {Src: "examples/postgres/main.go", Excerpt: true},
	"s3-fx":          {Src: "examples/s3/main.go", Excerpt: true},
	"blob-fx":        {Src: "examples/blob/main.go", Excerpt: true},
	"memcached-fx":   {Src: "examples/memcached/main.go", Excerpt: true},
	"nats-fx":        {Src: "examples/nats/main.go", Excerpt: true},
	"nats.json":      {Src: "examples/configs/nats.json"},
	"etcd-fx":        {Src: "modules/etcd/fxexample/main.go", Excerpt: true},
	"etcd.json":      {Src: "examples/configs/etcd.json"},
	"conformance":    {Src: "modules/cache/memcached/conformance_test.go", Excerpt: true},
	"chaos":          {Src: "modules/redis/chaos_test.go", Excerpt: true},
	"fencing":        {Src: "examples/fencing/main.go"},
	"pgfence":        {Src: "examples/pgfencing/main.go", Excerpt: true},
	"gocron":         {Src: "examples/gocron/main.go"},
	"watcher":        {Src: "examples/watcher/main.go", Excerpt: true},
	"metrics":        {Src: "examples/redis/main.go"},
}

// TestReadmeBlocks: every Go, JSON and YAML block of the README is a
// program or document of the repository that a test compiles and runs,
// shown whole, or a short excerpt of one that links to it.
func TestReadmeBlocks(t *testing.T) {
	doctest.CheckReadme(t, "../../README.md", readmeBlocks)
}
