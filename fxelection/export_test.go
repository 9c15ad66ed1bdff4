package fxelection

// FirstRenewal is the first renewal's timing the package doc states (doc
// tests only).
var FirstRenewal = firstRenewal

// RenewSlots is the number of batch-grid slots per RetryPeriod (doc tests
// only).
const RenewSlots = renewSlots
