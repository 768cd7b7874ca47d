//! Catalogs whose namespaces have one level (Glue's databases, a metastore's, S3 Tables'
//! namespaces): what a namespace path is there, and how a deeper one is refused.

/// A catalog with one level of namespaces; `service` names it in messages
/// ("Glue", "the Hive Metastore").
#[derive(Clone, Copy)]
pub struct OneLevel {
    pub service: &'static str,
}

impl OneLevel {
    /// The name a namespace that should exist has there. A deeper path names nothing:
    /// the error is the not-found message.
    pub fn existing(self, ns: &[String]) -> Result<&str, String> {
        match ns {
            [name] => Ok(name),
            _ => Err(format!("namespace {} does not exist: {} has one level of namespaces", dotted(ns), self.service)),
        }
    }

    /// The name a namespace to be created gets there. A deeper path cannot be created:
    /// the error is the bad-request message.
    pub fn creatable(self, ns: &[String]) -> Result<&str, String> {
        match ns {
            [name] => Ok(name),
            _ => {
                Err(format!("{} has one level of namespaces: {} cannot be created under it", self.service, dotted(ns)))
            }
        }
    }

    /// What to say of something the service does not have ("Glue has no Iceberg views").
    pub fn has_no(self, what: &str) -> String {
        format!("{} has no {what}", self.service)
    }
}

/// A namespace path as a client writes it: `a.b`.
pub fn dotted(ns: &[String]) -> String {
    ns.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_one_level_path_is_a_namespace() {
        let glue = OneLevel { service: "Glue" };
        let path = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        assert_eq!(glue.existing(&path(&["db"])), Ok("db"));
        assert_eq!(
            glue.existing(&path(&["a", "b"])).unwrap_err(),
            "namespace a.b does not exist: Glue has one level of namespaces"
        );
        assert_eq!(
            glue.creatable(&path(&["a", "b"])).unwrap_err(),
            "Glue has one level of namespaces: a.b cannot be created under it"
        );
        assert!(glue.creatable(&[]).is_err());
    }
}
