// TEMP: replaced by the helper's version.
export function assertChatCompletion(_b: unknown): void {}
export function assertChatChunk(_c: unknown): void {}
