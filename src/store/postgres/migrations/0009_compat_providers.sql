-- OpenAI-compatible providers (PRODUCT §17): their models, quirks and prices; NULL for the native providers. Their headers are sealed with the key.
ALTER TABLE provider_keys ADD COLUMN compat jsonb;
