package ddblease

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// Module provides the graph's fxelection.Backend (and the *Backend itself)
// from the application's *dynamodb.Client and Options, which are required
// because Options.Table is. The application owns the client. Construction
// does no I/O, so the app starts even while the store is down (the elector
// reports errors and retries).
//
//	fx.New(
//		fx.Provide(newDynamoDBClient), // your func(...) (*dynamodb.Client, error)
//		fx.Supply(ddblease.Options{Table: "leases"}),
//		ddblease.Module,
//		fxelection.Module,
//		fx.Supply(fxelection.Config{Name: "billing"}),
//	)
var Module = fx.Module("fxelection.dynamodb",
	fx.Provide(NewFromParams),
)

// Params are NewFromParams's dependencies.
type Params struct {
	fx.In

	Client  *dynamodb.Client
	Options Options
}

// Result is what NewFromParams provides.
type Result struct {
	fx.Out

	Backend  fxelection.Backend
	DynamoDB *Backend
}

// NewFromParams builds a Backend on the app's client.
func NewFromParams(p Params) (Result, error) {
	b, err := New(p.Client, p.Options)
	if err != nil {
		return Result{}, err
	}
	return Result{Backend: b, DynamoDB: b}, nil
}
