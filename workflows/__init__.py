"""The request workflows, above everything they call: submit, preview, approve, reject, cancel and lease expiry,
with the request API, the request pages and the request admin.

The request core stays low in `intake` (the model, the pure decision, the state machine); these workflows sit above
`provisioning` and `chargeback` and call them directly (fit, quota, inventory, the preview's objects, the apply and
teardown jobs, usage and right-sizing), so "go to definition" from `workflows.services.request_approve` reaches
`provisioning.services.allocation_on_approved`."""
