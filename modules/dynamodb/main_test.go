package ddblease_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// table is the table most tests share; the suite's and the fault tests'
// get tables or servers of their own.
const table = "fxelection-test"

var (
	private *testserver.Private[*testserver.DynamoDB] // the package's own server
	tableN  atomic.Int64
)

// TestMain starts one private DynamoDB Local for the package, creates the
// shared table, and checks for leaked goroutines after closing the server.
func TestMain(m *testing.M) {
	testserver.Main(m, func() func() error {
		private = testserver.StartPrivate(func() (*testserver.DynamoDB, error) {
			return testserver.StartDynamoDB(testserver.DynamoDBOptions{InMemory: true})
		}, func(srv *testserver.DynamoDB) error {
			c, tr := client(srv.Endpoint(), 0)
			defer tr.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return ddblease.CreateTable(ctx, c, table)
		})
		return private.Close
	})
}

// server returns the private server, skipping (failing under CI=true) when
// it could not start.
func server(t testing.TB) *testserver.DynamoDB { return private.Get(t) }

// client returns a client of its own on endpoint: DynamoDB Local accepts any
// credentials; retries is the SDK's attempt count (1: none).
func client(endpoint string, retries int) (*dynamodb.Client, *http.Transport) {
	tr := &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}
	c := dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", ""),
		HTTPClient:       &http.Client{Transport: tr, Timeout: 20 * time.Second},
		RetryMaxAttempts: retries,
	})
	return c, tr
}

// newClient returns a client of its own (own connection pool) on the
// private server; its connections close at cleanup.
func newClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return clientOn(t, server(t).Endpoint(), 0)
}

// clientOn is newClient for any endpoint; retries 0 is the SDK's default.
func clientOn(t testing.TB, endpoint string, retries int) *dynamodb.Client {
	t.Helper()
	c, tr := client(endpoint, retries)
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

// newBackend returns a backend on a new client (table: the shared one
// unless set).
func newBackend(t testing.TB, opts ddblease.Options) *ddblease.Backend {
	t.Helper()
	if opts.Table == "" {
		opts.Table = table
	}
	b, err := ddblease.New(newClient(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newTable returns a fresh table name for one test (created by the first
// backend's first operation).
func newTable() string {
	return fmt.Sprintf("fxe-%d-%d", time.Now().UnixNano()%1e9, tableN.Add(1))
}

var ctxT = electiontesting.Context // shared by every backend's tests
