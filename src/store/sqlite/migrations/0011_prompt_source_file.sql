-- A prompt loaded from a prompt file (GW_PROMPTS_DIR) records that file: the file wins at the next start.
ALTER TABLE prompts ADD COLUMN source_file TEXT;
