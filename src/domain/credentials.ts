/**
 * Connection strings carry passwords; nothing Ferry writes (logs, progress, errors) may.
 */

// Everything between the scheme and the last '@' of the same whitespace-free run is user info.
// Greedy on purpose: over-redacting a stray '@' in the query string is harmless, leaking is not.
const URI_CREDENTIALS = /(mongodb(?:\+srv)?:\/\/)\S*@/gi;

/** Replaces the user info of every MongoDB connection string in `text` with `<credentials>`. */
export function redactUris(text: string): string {
  return text.replace(URI_CREDENTIALS, '$1<credentials>@');
}
