// Which methods a path takes, for the 405 answer (with `Allow`) to a method a route does not take.

export interface RouteLike {
  method: string
  path: string
}

/** Compiles the app's routes once; `(path) => methods` (empty when no route has that path). */
export function methodsByPath(routes: readonly RouteLike[]): (path: string) => string[] {
  let compiled: { re: RegExp; method: string }[] | undefined
  return (path) => {
    compiled ??= routes.map((r) => ({
      re: new RegExp(`^${r.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '[^/]+')}/?$`),
      method: r.method,
    }))
    return [...new Set(compiled.filter((r) => r.re.test(path)).map((r) => r.method))]
  }
}
