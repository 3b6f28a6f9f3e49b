/** Every relative module specifier of `text`: `from '…'`, `import '…'`, `import('…')`, `typeof import('…')`. */
export function specifiers(text: string): string[] {
  return [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
}
