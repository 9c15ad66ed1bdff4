// Package ddblease is the DynamoDB backend for fxelection.
package ddblease
