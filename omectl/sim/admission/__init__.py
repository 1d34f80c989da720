"""Validating admission webhooks of the embedded API server: `match` picks the webhooks a write selects,
`dispatch` calls them, `config` validates and defaults the ValidatingWebhookConfiguration objects."""
