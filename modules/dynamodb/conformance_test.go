package ddblease_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// putItem writes item into tbl behind the backends' backs.
func putItem(t testing.TB, tbl string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := newClient(t).PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// deleteItem deletes election's item from tbl, as an operator might.
func deleteItem(t testing.TB, tbl, election string) {
	t.Helper()
	_, err := newClient(t).DeleteItem(ctxT(t), &dynamodb.DeleteItemInput{
		TableName: aws.String(tbl),
		Key:       map[string]types.AttributeValue{ddblease.KeyAttribute: &types.AttributeValueMemberS{Value: election}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// item builds an item from a value and a version.
func item(election, value, version string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		ddblease.KeyAttribute:     &types.AttributeValueMemberS{Value: election},
		ddblease.ValueAttribute:   &types.AttributeValueMemberS{Value: value},
		ddblease.VersionAttribute: &types.AttributeValueMemberN{Value: version},
	}
}

// TestConformance runs the core's conformance suite (contract and smoke) in
// a table of its own, which the RecreatedStore case deletes and the backends
// create again.
func TestConformance(t *testing.T) {
	tbl := newTable()
	opts := ddblease.Options{Table: tbl}
	if err := ddblease.CreateTable(ctxT(t), newClient(t), tbl); err != nil {
		t.Fatal(err)
	}
	electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, opts)
	}, electiontest.Options{
		TTL: time.Second,
		PutGarbage: func(t *testing.T, election string, _ time.Duration) {
			putItem(t, tbl, item(election, `{"not": "a lease", "fxelection_value": [1]}`, "1"))
		},
		GarbageNeverExpires: true,
		DeleteRecord:        func(t *testing.T, election string) { deleteItem(t, tbl, election) },
		Recreate:            func(t *testing.T, _ string) { recreateTable(t, tbl) },
		StoreDown:           storeDown,
	})
}

// recreateTable deletes tbl with every item and creates it again, behind
// the backends' backs, as an operator might.
func recreateTable(t *testing.T, tbl string) {
	t.Helper()
	c := newClient(t)
	if _, err := c.DeleteTable(ctxT(t), &dynamodb.DeleteTableInput{TableName: aws.String(tbl)}); err != nil {
		t.Fatalf("delete table: %v", err)
	}
	if err := ddblease.CreateTable(ctxT(t), c, tbl); err != nil {
		t.Fatalf("create table again: %v", err)
	}
}

// storeDown returns a backend on a DynamoDB Local of its own, its tables
// in a file, for the suite's StoreDown case: the item survives a crash,
// and a renewal after the restart writes a new version.
func storeDown(t *testing.T) electiontest.DownStore {
	srv := testserver.NewDynamoDB(t, testserver.DynamoDBOptions{})
	b, err := ddblease.New(clientOn(t, srv.Endpoint(), 1), ddblease.Options{Table: "faults"})
	if err != nil {
		t.Fatal(err)
	}
	return electiontest.DownStore{Backend: b, Kill: srv.Kill, Restart: srv.Restart, RenewWrites: true}
}

// createOtherKeyTable creates a table keyed by another attribute and
// returns its name.
func createOtherKeyTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	name := newTable()
	_, err := c.CreateTable(ctxT(t), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return name
}
