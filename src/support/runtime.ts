/** The Node.js lines this service supports: the LTS lines it is tested on (CI runs both). */
export const supportedNodeMajors = [22, 24];

/** Null when `version` (as process.versions.node) is a supported line, else one line that says which are. */
export function unsupportedNode(version: string): string | null {
  const major = Number(version.split('.')[0]);
  if (major >= supportedNodeMajors[0]!) return null;
  const supported = supportedNodeMajors.join(' or ');
  return `Node.js ${version} is not supported; use Node.js ${supported} (the LTS lines; .nvmrc names 24)`;
}
