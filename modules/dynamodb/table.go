package ddblease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// ErrTableSchema is matched by CreateTable's error for an existing table
// whose key is not the single string partition key KeyAttribute.
var ErrTableSchema = errors.New("ddblease: the table's key is not the string partition key " + KeyAttribute)

// tablePoll is how often CreateTable looks whether a new table is active.
const tablePoll = 200 * time.Millisecond

// CreateTable creates table for the Backend if it does not exist: on-demand
// capacity (PAY_PER_REQUEST), with the string partition key KeyAttribute
// and no sort key. It then waits, until ctx ends, for the table to be
// ACTIVE. An existing table is checked, not changed: a key other than
// KeyAttribute alone gives an error matching ErrTableSchema. A Backend
// calls it on its first operation unless Options.SkipCreateTable; call it
// yourself at start-up (it needs dynamodb:DescribeTable and
// dynamodb:CreateTable) to find a missing permission early. Its errors pass
// through backendkit.RedactError.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	if client == nil {
		return errors.New("ddblease: nil client")
	}
	if err := (Options{Table: table}).Validate(); err != nil {
		return err
	}
	return backendkit.RedactError(createTable(ctx, client, table))
}

func createTable(ctx context.Context, client *dynamodb.Client, table string) error {
	created := false
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		var nf *types.ResourceNotFoundException
		switch {
		case errors.As(err, &nf) && !created:
			_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
				TableName:            aws.String(table),
				BillingMode:          types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(KeyAttribute), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(KeyAttribute), KeyType: types.KeyTypeHash}},
			})
			var inUse *types.ResourceInUseException
			if err != nil && !errors.As(err, &inUse) { // in use: another candidate created it first
				return fmt.Errorf("create table: %w", err)
			}
			created = true
			continue
		case errors.As(err, &nf):
			// Created but not yet visible: look again.
		case err != nil:
			return fmt.Errorf("describe table: %w", err)
		default:
			if err := checkKey(out.Table); err != nil {
				return err
			}
			if out.Table.TableStatus == types.TableStatusActive {
				return nil
			}
		}
		if !backendkit.SleepContext(ctx, tablePoll) {
			return fmt.Errorf("wait for table to become active: %w", ctx.Err())
		}
	}
}

// checkKey checks that t's key is KeyAttribute alone, a string.
func checkKey(t *types.TableDescription) error {
	if t == nil || len(t.KeySchema) != 1 || aws.ToString(t.KeySchema[0].AttributeName) != KeyAttribute ||
		t.KeySchema[0].KeyType != types.KeyTypeHash {
		return ErrTableSchema
	}
	for _, a := range t.AttributeDefinitions {
		if aws.ToString(a.AttributeName) == KeyAttribute && a.AttributeType != types.ScalarAttributeTypeS {
			return ErrTableSchema
		}
	}
	return nil
}

// storeErr notes a missing table (so that the next operation creates it
// again, unless SkipCreateTable) and returns err.
func (r *items) storeErr(err error) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		r.ensured.Store(false)
	}
	return err
}

// ensureTable creates the table if it is missing (CreateTable), once per
// Backend and again after an operation found it missing; with
// SkipCreateTable it does nothing.
func (r *items) ensureTable(ctx context.Context) error {
	if r.opts.SkipCreateTable || r.ensured.Load() {
		return nil
	}
	r.ensureMu.Lock()
	defer r.ensureMu.Unlock()
	if r.ensured.Load() {
		return nil
	}
	if err := createTable(ctx, r.client, r.opts.Table); err != nil {
		return err
	}
	r.ensured.Store(true)
	return nil
}
